// Atomic writes: the file appears whole, an old file survives a failed write, and no temporary
// file is left behind on failure.

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "checkpoint/atomic_file.hpp"
#include "data/file_limits.hpp"

namespace fs = std::filesystem;
using glass::FileError;

namespace {

fs::path temp_dir(const std::string& tag) { return glass_test::temp_dir("glass_atomic_" + tag); }

std::size_t count_entries(const fs::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

TEST(AtomicFile, WritesAndReplaces) {
  const fs::path dir = temp_dir("write");
  const std::string path = (dir / "config.json").string();
  glass::write_file_atomic(path, "first");
  EXPECT_EQ(glass::read_file(path), "first");
  glass::write_file_atomic(path, std::string("second\0with nul", 15));
  EXPECT_EQ(glass::read_file(path), std::string("second\0with nul", 15));
  EXPECT_EQ(count_entries(dir), 1u);  // no temporary left beside it
}

TEST(AtomicFile, FailedRenameLeavesNoTempAndKeepsTarget) {
  // The target is a non-empty directory: the temp file is written, the rename fails (EISDIR).
  const fs::path dir = temp_dir("rename");
  fs::create_directories(dir / "target" / "inside");
  try {
    glass::write_file_atomic((dir / "target").string(), "data");
    FAIL() << "expected FileError";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("target"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_directory(dir / "target" / "inside"));
  EXPECT_EQ(count_entries(dir), 1u);  // only "target": the temporary was removed
}

TEST(AtomicFile, FailedWriteLeavesNoTempAndKeepsOldFile) {
  // Make write() itself fail (even as root) with a file-size limit: writes beyond 1 KiB get EFBIG
  // (SIGXFSZ ignored). The old file must survive untouched and no temporary may remain.
  const fs::path dir = temp_dir("efbig");
  const std::string path = (dir / "model.safetensors").string();
  glass::write_file_atomic(path, "old weights");

  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit small = saved;
  small.rlim_cur = 1024;
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string message;
  try {
    glass::write_file_atomic(path, std::string(64 * 1024, 'x'));
  } catch (const FileError& e) {
    message = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);

  EXPECT_NE(message.find("File too large"), std::string::npos) << message;
  EXPECT_NE(message.find(path), std::string::npos) << message;
  EXPECT_EQ(glass::read_file(path), "old weights");
  EXPECT_EQ(count_entries(dir), 1u);  // the temporary was removed
}

TEST(AtomicFile, MissingDirectoryIsAClearError) {
  try {
    glass::write_file_atomic("/nonexistent_glass_dir/model.safetensors", "x");
    FAIL();
  } catch (const FileError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("cannot write file '/nonexistent_glass_dir/model.safetensors'"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("No such file or directory"), std::string::npos) << msg;
  }
}

TEST(AtomicFile, UnwritableDirectory) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: permission bits do not stop writes";
  const fs::path dir = temp_dir("readonly");
  fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec);
  EXPECT_THROW(glass::write_file_atomic((dir / "f").string(), "x"), FileError);
  try {
    glass::ensure_writable_directory(dir.string());
    ADD_FAILURE();
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("Permission denied"), std::string::npos) << e.what();
  }
  fs::permissions(dir, fs::perms::owner_all);
  EXPECT_EQ(count_entries(dir), 0u);
}

TEST(AtomicFile, EnsureDirectory) {
  const fs::path dir = temp_dir("ensure");
  glass::ensure_directory((dir / "a" / "b").string());
  EXPECT_TRUE(fs::is_directory(dir / "a" / "b"));
  glass::ensure_writable_directory((dir / "a").string());
  EXPECT_EQ(count_entries(dir / "a"), 1u);  // the probe file was removed
  std::ofstream(dir / "file") << "x";
  EXPECT_THROW(glass::ensure_directory((dir / "file").string()), FileError);
  // A directory below a regular file cannot be created.
  try {
    glass::ensure_directory((dir / "file" / "sub").string());
    FAIL();
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create directory"), std::string::npos) << e.what();
  }
  EXPECT_THROW(glass::read_file((dir / "nope").string()), FileError);
  EXPECT_THROW(glass::read_file(dir.string()), FileError);
}

TEST(AtomicFile, StaleTempFilesOfDeadProcessesAreRemovedOthersKept) {
  const fs::path dir = temp_dir("stale");
  // A process id that surely ran and ended: a child that exits at once, reaped.
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  const std::string dead = std::to_string(child), alive = std::to_string(::getppid());
  auto touch = [&](const std::string& name) { std::ofstream(dir / name) << "partial"; };
  touch("model.safetensors.tmp." + dead + ".3");         // left by a killed run: removed
  touch("train_state.safetensors.tmp." + dead + ".10");  // removed
  touch("model.safetensors.tmp." + alive + ".1");        // a live process is writing it: kept
  touch("model.safetensors");                            // the checkpoint: kept
  touch("notes.tmp.txt");                                // not our pattern: kept
  touch("x.tmp.12a.1");                                  // not a pid: kept
  touch("diary.tmp." + dead + ".06");                    // not one of the files we write: kept
  const std::vector<std::string> ours = {"model.safetensors", "train_state.safetensors"};
  EXPECT_EQ(glass::remove_stale_temp_files(dir.string(), ours), 2u);
  EXPECT_FALSE(fs::exists(dir / ("model.safetensors.tmp." + dead + ".3")));
  EXPECT_FALSE(fs::exists(dir / ("train_state.safetensors.tmp." + dead + ".10")));
  EXPECT_TRUE(fs::exists(dir / ("model.safetensors.tmp." + alive + ".1")));
  EXPECT_TRUE(fs::exists(dir / "model.safetensors"));
  EXPECT_TRUE(fs::exists(dir / "notes.tmp.txt"));
  EXPECT_TRUE(fs::exists(dir / "x.tmp.12a.1"));
  EXPECT_TRUE(fs::exists(dir / ("diary.tmp." + dead + ".06")));
  EXPECT_EQ(count_entries(dir), 5u);
  EXPECT_EQ(glass::remove_stale_temp_files((dir / "missing").string(), ours), 0u);  // no directory
}

TEST(AtomicFile, ASymlinkIsFollowedNeverReplaced) {
  const fs::path dir = temp_dir("symlink");
  glass::write_file_atomic((dir / "real.html").string(), "old");
  fs::create_symlink("real.html", dir / "link.html");
  glass::write_file_atomic((dir / "link.html").string(), "new");
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir / "link.html")));  // still a link
  EXPECT_EQ(glass::read_file((dir / "real.html").string()), "new");    // its target replaced
  EXPECT_EQ(count_entries(dir), 2u);                                   // no temporary file left
  // A link to nothing is refused (creating its target somewhere else would surprise).
  fs::create_symlink("missing/target.html", dir / "dangling.html");
  try {
    glass::write_file_atomic((dir / "dangling.html").string(), "x");
    FAIL() << "a dangling link was written";
  } catch (const FileError& e) {
    EXPECT_NE(std::string(e.what()).find("symbolic link"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(dir / "dangling.html")));
}

TEST(AtomicFile, DevicesAndFifosAreWrittenInPlaceDirectoriesRefused) {
  // /dev/null must stay a character device (as root, rename would have replaced it).
  glass::write_file_atomic("/dev/null", "nothing");
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  // A device that fails the write (/dev/full: ENOSPC) is an error, not a silent success.
  if (fs::exists("/dev/full")) {
    try {
      glass::write_file_atomic("/dev/full", "x");
      FAIL() << "writing /dev/full succeeded";
    } catch (const FileError& e) {
      EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos)
          << e.what();
    }
    EXPECT_TRUE(fs::is_character_file("/dev/full"));
  }
  const fs::path dir = temp_dir("special");
  // A FIFO: written directly (a reader gets the bytes), not replaced by a regular file.
  const fs::path fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const pid_t reader = ::fork();
  ASSERT_GE(reader, 0);
  if (reader == 0) {
    std::ifstream in(fifo);
    std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ::_exit(got == "through the pipe" ? 0 : 1);
  }
  glass::write_file_atomic(fifo.string(), "through the pipe");
  int status = 0;
  ::waitpid(reader, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(fs::is_fifo(fifo));
  // A directory is refused.
  fs::create_directories(dir / "sub");
  EXPECT_THROW(glass::write_file_atomic((dir / "sub").string(), "x"), FileError);
  EXPECT_TRUE(fs::is_directory(dir / "sub"));
}

TEST(ReadCheckpointFile, RefusesAFileLargerThanItsKindsLimitBeforeReadingIt) {
  const fs::path dir = temp_dir("limits");
  // Sparse files: their size is what the limit is checked against, no byte is written.
  for (const auto& [name, limit] :
       std::vector<std::pair<std::string, std::uint64_t>>{{"config.json", 16 * glass::kMiB},
                                                          {"tokenizer.json", 64 * glass::kMiB},
                                                          {"manifest.json", 16 * glass::kMiB},
                                                          {"log.csv", 256 * glass::kMiB},
                                                          {"interp.json", 4 * glass::kMiB}}) {
    EXPECT_EQ(glass::max_file_bytes(name), limit) << name;
    const fs::path path = dir / name;
    glass_test::write_file(path, "{}");
    EXPECT_EQ(glass::read_checkpoint_file(path.string()), "{}") << "a small file is read";
    fs::resize_file(path, limit);
    if (limit <= 4 * glass::kMiB) {
      EXPECT_EQ(glass::read_checkpoint_file(path.string()).size(), limit)
          << "exactly the limit is read";
    }
    fs::resize_file(path, limit + 1);
    try {
      glass::read_checkpoint_file(path.string());
      ADD_FAILURE() << name << " past its limit was read";
    } catch (const FileError& e) {
      EXPECT_NE(std::string(e.what()).find(std::to_string(limit + 1) + " bytes, more than the " +
                                           std::to_string(limit) + " glass reads for a " + name),
                std::string::npos)
          << e.what();
    }
    fs::remove(path);
  }
  EXPECT_EQ(glass::max_file_bytes("model.safetensors"), 16 * 1024 * glass::kMiB);
  fs::remove_all(dir);
}
