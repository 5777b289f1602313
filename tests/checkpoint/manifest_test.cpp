// The manifest of a save (checkpoint/manifest.hpp): SHA-256 against the FIPS 180-4 examples, a
// manifest that lists every file, and each way a file can differ from it; the readers' pin on a
// save (checkpoint/run_dir.hpp) that the trainer's cleanup respects.

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "test_util.hpp"
#include "checkpoint/atomic_file.hpp"
#include "checkpoint/checkpoint.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/run_dir.hpp"
#include "checkpoint/sha256.hpp"

namespace fs = std::filesystem;
using namespace glass;

namespace {

void put(const fs::path& p, const std::string& bytes) { write_file_atomic(p.string(), bytes); }

/// Runs `f`, which must throw CheckpointError; returns its message.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const CheckpointError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no CheckpointError";
  return "";
}

}  // namespace

TEST(Sha256, MatchesTheExamplesOfFips180) {
  // FIPS 180-4's examples (NIST, "SHA256.pdf" of the example values): one block, two blocks,
  // the empty message and one million 'a' (15,625 blocks, padding in a block of its own).
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, PiecesOfAnyLengthGiveTheDigestOfTheWhole) {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += static_cast<char>(i * 7 + 3);
  for (std::size_t piece : {1u, 3u, 63u, 64u, 65u, 200u}) {
    Sha256 h;
    for (std::size_t at = 0; at < text.size(); at += piece)
      h.update(std::string_view(text).substr(at, piece));
    EXPECT_EQ(h.hex(), sha256_hex(text)) << "pieces of " << piece;
  }
}

TEST(Sha256, StreamedMillionAIsFipsDigestAndAMovedHasherGoesOn) {
  // FIPS 180-4's one million 'a', fed as 1000 pieces of 1000 through a hasher that is moved
  // halfway: the digest of the whole message.
  Sha256 first;
  const std::string piece(1000, 'a');
  for (int i = 0; i < 500; ++i) first.update(piece);
  Sha256 second = std::move(first);
  for (int i = 0; i < 500; ++i) second.update(piece);
  EXPECT_EQ(second.hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Manifest, ListsEveryFileOfTheSaveWithItsSizeAndDigest) {
  const fs::path dir = glass_test::temp_dir("glass-manifest-list");
  put(dir / "config.json", "{}");
  put(dir / "model.safetensors", "abc");
  put(dir / "model.safetensors.tmp.1.0", "a write in progress");  // not part of the save
  write_manifest(dir.string(), "00ff00ff00ff00ff", 42);
  const Manifest m = read_manifest(dir.string());
  ASSERT_TRUE(m.present);
  EXPECT_EQ(m.run_id, "00ff00ff00ff00ff");
  EXPECT_EQ(m.step, 42);
  ASSERT_EQ(m.files.size(), 2u);
  EXPECT_EQ(m.files.at("model.safetensors").bytes, 3u);
  EXPECT_EQ(m.files.at("model.safetensors").sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");  // "abc", above
  EXPECT_EQ(m.files.at("config.json").bytes, 2u);
  EXPECT_NO_THROW(verify_save(dir.string()));
  EXPECT_FALSE(read_manifest((dir / "elsewhere").string()).present);
}

TEST(Manifest, AChangedMissingOrUnlistedFileIsRefusedByName) {
  const fs::path dir = glass_test::temp_dir("glass-manifest-refuse");
  put(dir / "config.json", R"({"rope_base": 10000})");
  put(dir / "log.csv", "step\n");
  write_manifest(dir.string(), "0123456789abcdef", 7);
  const Manifest m = read_manifest(dir.string());
  // Same size, one character changed: the digest tells them apart.
  std::string msg = error_of(
      [&] { check_against_manifest(m, dir.string(), "config.json", R"({"rope_base": 50000})"); });
  EXPECT_NE(msg.find("config.json: the file was changed after glass train wrote it"),
            std::string::npos)
      << msg;
  msg = error_of([&] { check_against_manifest(m, dir.string(), "best.safetensors", "x"); });
  EXPECT_NE(msg.find("best.safetensors: not listed in the save's manifest.json"), std::string::npos)
      << msg;
  fs::remove(dir / "log.csv");
  msg = error_of([&] { verify_save(dir.string()); });
  EXPECT_NE(msg.find("log.csv"), std::string::npos) << msg;
  EXPECT_NE(msg.find("listed in the save's manifest.json"), std::string::npos) << msg;
  // Without a manifest there is nothing to check against.
  EXPECT_NO_THROW(check_against_manifest(Manifest{}, dir.string(), "config.json", "anything"));
}

TEST(Manifest, AManifestThatIsNotOneIsRefused) {
  const fs::path dir = glass_test::temp_dir("glass-manifest-bad");
  for (
      const std::string& text :
      {std::string("not json"), std::string(R"({"format": "other", "version": 1})"),
       std::string(
           R"({"format": "glass-save-manifest", "version": 2, "run_id": "a", "step": 1, "files": {}})"),
       std::string(
           R"({"format": "glass-save-manifest", "version": 1, "run_id": "a", "step": -1, "files": {}})"),
       std::string(
           R"({"format": "glass-save-manifest", "version": 1, "run_id": "a", "step": 1, "step": 2, "files": {}})"),
       std::string(
           R"({"format": "glass-save-manifest", "version": 1, "run_id": "a", "step": 1, "files": {"../x": {"bytes": 1, "sha256": "0000000000000000000000000000000000000000000000000000000000000000"}}})")}) {
    put(dir / "manifest.json", text);
    const std::string msg = error_of([&] { read_manifest(dir.string()); });
    EXPECT_NE(msg.find("manifest.json"), std::string::npos) << text << ": " << msg;
  }
}

TEST(SavePin, APinnedSaveIsSkippedByTheCleanupAndRemovedOnceReleased) {
  const fs::path run = glass_test::temp_dir("glass-save-pin");
  fs::create_directories(run / "step-000002");
  put(run / "step-000002" / "model.safetensors", "w");
  fs::create_symlink("step-000002", run / "current");
  {
    const SavePin pin(run.string());
    EXPECT_EQ(pin.dir(), (run / "step-000002").string());
    EXPECT_FALSE(remove_save_unless_pinned((run / "step-000002").string()));
    EXPECT_TRUE(fs::exists(run / "step-000002" / "model.safetensors"));
  }
  EXPECT_TRUE(remove_save_unless_pinned((run / "step-000002").string()));
  EXPECT_FALSE(fs::exists(run / "step-000002"));
  // A pin on a save removed before it was taken: `current` is read again, and a run directory
  // without a save pins itself (the reader then says what is missing).
  fs::remove(run / "current");
  const SavePin none(run.string());
  EXPECT_EQ(none.dir(), run.string());
}
