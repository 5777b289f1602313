// Fuzzes the manifest reader of a save (checkpoint/manifest.hpp). The input is the text of a
// manifest.json, put into a save directory that also holds two files of known bytes. Reading it
// must either throw CheckpointError naming the manifest (any other exception or a crash is a
// failure) or give a manifest whose step is >= 0 and whose file names are plain names; checking
// a file against it and verifying the whole save must either throw CheckpointError naming the
// file or pass, and pass only when every byte and digest listed matches the file on disk.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>

#include "fuzz_util.hpp"
#include "checkpoint/checkpoint.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/sha256.hpp"

namespace {

namespace fs = std::filesystem;

// The two files beside the manifest, in every save the harness makes.
const char* const kConfig = "{\"model\": {}}\n";
const char* const kLog = "step,train_loss,val_loss\n0,4.19,4.19\n";

const std::string& save_dir() {
  static const std::string dir = [] {
    const std::string d = glass::fuzz::scratch_dir() + "/save";
    fs::create_directories(d);
    glass::fuzz::write_plain(d + "/config.json", kConfig);
    glass::fuzz::write_plain(d + "/log.csv", kLog);
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string& dir = save_dir();
  glass::fuzz::write_plain(dir + "/manifest.json", text);
  glass::Manifest manifest;
  try {
    manifest = glass::read_manifest(dir);
  } catch (const glass::CheckpointError& e) {
    GLASS_FUZZ_CHECK(std::strstr(e.what(), "manifest.json") != nullptr);  // names the file
    return 0;
  }
  GLASS_FUZZ_CHECK(manifest.present);
  GLASS_FUZZ_CHECK(manifest.step >= 0);
  for (const auto& [name, entry] : manifest.files) {
    GLASS_FUZZ_CHECK(!name.empty() && name != "." && name != "..");
    GLASS_FUZZ_CHECK(name.find('/') == std::string::npos);
    GLASS_FUZZ_CHECK(name.find('\0') == std::string::npos);
    GLASS_FUZZ_CHECK(entry.sha256.size() == 64);
  }
  // One file checked by itself, as a reader does with the bytes it has just read.
  bool config_ok = true;
  try {
    glass::check_against_manifest(manifest, dir, "config.json", kConfig);
  } catch (const glass::CheckpointError& e) {
    GLASS_FUZZ_CHECK(std::strstr(e.what(), "config.json") != nullptr);
    config_ok = false;
  }
  if (config_ok) {
    const auto it = manifest.files.find("config.json");
    GLASS_FUZZ_CHECK(it != manifest.files.end());
    GLASS_FUZZ_CHECK(it->second.bytes == std::strlen(kConfig));
    GLASS_FUZZ_CHECK(it->second.sha256 == glass::sha256_hex(kConfig));
  }
  // The whole save: passes only when every listed file is there with the listed bytes.
  bool save_ok = true;
  try {
    glass::verify_save(dir);
  } catch (const glass::CheckpointError& e) {
    save_ok = false;
    bool names_a_file = false;
    for (const auto& [name, entry] : manifest.files)
      names_a_file = names_a_file || std::strstr(e.what(), (dir + "/" + name).c_str()) != nullptr;
    GLASS_FUZZ_CHECK(names_a_file);
  }
  if (save_ok) {
    for (const auto& [name, entry] : manifest.files) {
      const std::string bytes = name == "config.json"     ? kConfig
                                : name == "log.csv"       ? kLog
                                : name == "manifest.json" ? text
                                                          : std::string("\x01 not a file");
      GLASS_FUZZ_CHECK(entry.bytes == bytes.size());
      GLASS_FUZZ_CHECK(entry.sha256 == glass::sha256_hex(bytes));
    }
  }
  return 0;
}
