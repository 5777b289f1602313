// Reading the growing logs of a run directory (serve/live_log.hpp): whole lines only, the
// bytes appended since the last read, a new file starts over.

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "test_util.hpp"
#include "serve/live_log.hpp"

namespace fs = std::filesystem;

namespace {

TEST(CsvTable, ParsesNamedColumnsEmptyFieldsAreNaNAndAnUnfinishedLineIsLeftOut) {
  const glass::CsvTable t = glass::parse_csv_numbers(
      "step,lr,train_loss,val_loss\n0,0.001,4.5,4.6\n10,0.002,3.25,\n20,bad,1\n30,0.003,2.0,2.");
  ASSERT_EQ(t.columns, (std::vector<std::string>{"step", "lr", "train_loss", "val_loss"}));
  ASSERT_EQ(t.rows.size(), 2u) << "the 3-field row is skipped, the last line has no newline yet";
  EXPECT_EQ(t.rows[0][0], 0);
  EXPECT_DOUBLE_EQ(t.rows[0][3], 4.6);
  EXPECT_DOUBLE_EQ(t.rows[1][2], 3.25);
  EXPECT_TRUE(std::isnan(t.rows[1][3])) << "an empty field";
  EXPECT_EQ(t.column("val_loss"), 3);
  EXPECT_EQ(t.column("grad_norm"), -1);
  EXPECT_TRUE(glass::parse_csv_numbers("").columns.empty());
  EXPECT_TRUE(std::isnan(glass::parse_csv_numbers("a,b\r\n1,x\r\n").rows.at(0).at(1)))
      << "not a number";
}

TEST(StepLog, ReadsWhatWasAppendedWholeLinesOnlyAndStartsOverForANewFile) {
  const fs::path dir = glass_test::temp_dir("step_log");
  const fs::path path = dir / "steps.csv";
  glass::StepLog log(path.string());
  log.refresh();
  EXPECT_TRUE(log.table().rows.empty()) << "no file yet";

  {
    std::ofstream out(path);
    out << "step,loss,lr,grad_norm,tokens_per_s,elapsed_s\n1,4.0,0.001,2.0,100,0.1\n2,3.9,0.0";
  }
  log.refresh();
  ASSERT_EQ(log.table().columns.size(), 6u);
  ASSERT_EQ(log.table().rows.size(), 1u) << "step 2 is still being written";
  {
    std::ofstream out(path, std::ios::app);
    out << "01,1.5,100,0.2\n3,3.8,0.001,1.2,100,0.3\n";
  }
  log.refresh();
  ASSERT_EQ(log.table().rows.size(), 3u);
  EXPECT_DOUBLE_EQ(log.table().rows[1][2], 0.001) << "the line finished by the second write";
  EXPECT_DOUBLE_EQ(log.table().rows[2][3], 1.2);
  log.refresh();
  EXPECT_EQ(log.table().rows.size(), 3u) << "nothing new";

  // A new run replaces the file (another inode): read from the start.
  fs::remove(path);
  glass_test::write_file(
      path, "step,loss,lr,grad_norm,tokens_per_s,elapsed_s\n1,4.1,0.001,2.0,100,0.1\n");
  log.refresh();
  ASSERT_EQ(log.table().rows.size(), 1u);
  EXPECT_DOUBLE_EQ(log.table().rows[0][1], 4.1);
  fs::remove(path);
  log.refresh();
  EXPECT_TRUE(log.table().rows.empty());
}

}  // namespace
