// The training state of a checkpoint (train/train_state.cpp) read back from corrupt files: every
// way a file can be bad is a CheckpointError that names the file.

#include <filesystem>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include "fixtures.hpp"
#include "train/adamw.hpp"
#include "train/io/atomic_file.hpp"
#include "train/train_state.hpp"

using namespace glass;
namespace fs = std::filesystem;

namespace {

void expect_refused(const std::string& dir, AdamW& optimizer, const std::string& phrase) {
  try {
    load_train_state(dir, optimizer);
    FAIL() << "train_state.json loaded; expected an error saying " << phrase;
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find(phrase), std::string::npos) << e.what();
  }
}

}  // namespace

// A number beyond the range of a double makes the JSON parser throw out_of_range, not
// parse_error (found by the train_state fuzz harness with "22e2222"); an integer field holding
// a number that is not an integer (converting 3.5e41 to long is undefined behaviour, reported by
// UBSan) is refused too.
TEST(TrainState, OutOfRangeAndNonIntegerNumbersAreCheckpointErrors) {
  const fs::path dir = fs::temp_directory_path() / ("glass-train-state-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const ModelConfig config = glass_test::write_small_checkpoint(dir.string(), 16, 3);
  Decoder model(config, 3);
  AdamW optimizer(model.named_parameters());
  const std::string state = (dir / "train_state.json").string();
  write_file_atomic(state, "{\"step\": 22e2222}");
  expect_refused(dir.string(), optimizer, "train_state.json");
  write_file_atomic(state, "{\"step\": 355555555555555555555555555555555555555555}");
  expect_refused(dir.string(), optimizer, "\"step\" must be an integer");
  fs::remove_all(dir);
}
