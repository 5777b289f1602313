// The manifest of a save: sizes and SHA-256 of its files, its run id and step. See manifest.hpp.

#include "checkpoint/manifest.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "checkpoint/atomic_file.hpp"
#include "checkpoint/checkpoint.hpp"
#include "data/json_no_duplicates.hpp"
#include "checkpoint/sha256.hpp"

namespace glass {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kFormat = "glass-save-manifest";
constexpr int kVersion = 1;

}  // namespace

void write_manifest(const std::string& save_dir, const std::string& run_id, long step) {
  nlohmann::ordered_json files = nlohmann::ordered_json::object();
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(save_dir, ec)) {
    const std::string name = entry.path().filename().string();
    // Temporary files of a write in progress (FILE.tmp.PID.N) are not part of the save.
    if (name == kManifestFile || name.find(".tmp.") != std::string::npos) continue;
    if (entry.is_regular_file(ec)) names.push_back(name);
  }
  if (ec) throw FileError(fmt::format("cannot list directory '{}': {}", save_dir, ec.message()));
  std::sort(names.begin(), names.end());
  // best.safetensors is often a hard link of model.safetensors: one file, hashed once.
  std::map<std::pair<dev_t, ino_t>, nlohmann::ordered_json> seen;
  for (const std::string& name : names) {
    const std::string path = (fs::path(save_dir) / name).string();
    struct stat st {};
    const bool known = ::stat(path.c_str(), &st) == 0;
    if (known && seen.count({st.st_dev, st.st_ino}) != 0) {
      files[name] = seen[{st.st_dev, st.st_ino}];
      continue;
    }
    const std::string bytes = read_file(path);
    files[name] = {{"bytes", bytes.size()}, {"sha256", sha256_hex(bytes)}};
    if (known) seen[{st.st_dev, st.st_ino}] = files[name];
  }
  const nlohmann::ordered_json manifest = {{"format", kFormat},
                                           {"version", kVersion},
                                           {"run_id", run_id},
                                           {"step", step},
                                           {"files", files}};
  write_file_atomic((fs::path(save_dir) / kManifestFile).string(), manifest.dump(1) + "\n");
}

Manifest read_manifest(const std::string& dir) {
  Manifest m;
  const std::string path = (fs::path(dir) / kManifestFile).string();
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec))) return m;
  std::string text;
  try {
    text = read_checkpoint_file(path);
  } catch (const FileError& e) {
    throw CheckpointError(e.what());
  }
  auto bad = [&](const std::string& what) {
    return CheckpointError(
        fmt::format("{}: {}; the save cannot be verified (the file is corrupt)", path, what));
  };
  json j;
  try {
    j = parse_json_no_duplicate_keys(text);
  } catch (const std::exception& e) {
    throw bad(fmt::format("not a valid manifest ({})", e.what()));
  }
  if (!j.is_object() || j.value("format", json()) != kFormat)
    throw bad(fmt::format("not a manifest (no \"format\": \"{}\")", kFormat));
  if (j.value("version", json()) != kVersion)
    throw bad(fmt::format("manifest version {} is not one this glass reads ({})",
                          j.value("version", json()).dump(), kVersion));
  if (!j.contains("run_id") || !j["run_id"].is_string()) throw bad("\"run_id\" must be a string");
  if (!j.contains("step") || !j["step"].is_number_integer() || j["step"].get<long>() < 0)
    throw bad("\"step\" must be an integer >= 0");
  if (!j.contains("files") || !j["files"].is_object()) throw bad("\"files\" must be an object");
  m.run_id = j["run_id"].get<std::string>();
  m.step = j["step"].get<long>();
  for (const auto& [name, entry] : j["files"].items()) {
    // A NUL would end the name where the file system reads it (a listed "config.json\0x"
    // would check the bytes of config.json); no file of a save has a control character.
    const bool control = std::any_of(name.begin(), name.end(),
                                     [](char c) { return static_cast<unsigned char>(c) < 0x20; });
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == ".." ||
        control)
      throw bad(fmt::format("{} is not a file name of a save",  // quoted, with escapes
                            json(name).dump(-1, ' ', false, json::error_handler_t::replace)));
    if (!entry.is_object() || !entry.contains("bytes") || !entry["bytes"].is_number_unsigned() ||
        !entry.contains("sha256") || !entry["sha256"].is_string() ||
        entry["sha256"].get<std::string>().size() != 64)
      throw bad(fmt::format("the entry of \"{}\" needs \"bytes\" and a 64-digit \"sha256\"", name));
    m.files[name] = {entry["bytes"].get<std::size_t>(), entry["sha256"].get<std::string>()};
  }
  m.present = true;
  return m;
}

void check_against_manifest(const Manifest& manifest, const std::string& dir,
                            const std::string& name, const std::string& bytes) {
  if (!manifest.present) return;
  const std::string path = (fs::path(dir) / name).string();
  const auto it = manifest.files.find(name);
  if (it == manifest.files.end())
    throw CheckpointError(fmt::format(
        "{}: not listed in the save's {} (added to the save after glass train wrote it?); "
        "refusing to use it",
        path, kManifestFile));
  const std::string actual = sha256_hex(bytes);
  if (bytes.size() != it->second.bytes || actual != it->second.sha256)
    throw CheckpointError(fmt::format(
        "{}: the file was changed after glass train wrote it ({} bytes with SHA-256 {}, the "
        "save's {} records {} bytes with SHA-256 {}): a disk error, a hand edit or a file of "
        "another save. Refusing to use it; restore the file, or use another save of the run",
        path, bytes.size(), actual.substr(0, 16), kManifestFile, it->second.bytes,
        it->second.sha256.substr(0, 16)));
}

std::string read_verified_file(const std::string& dir, const std::string& name) {
  const Manifest manifest = read_manifest(dir);
  std::string bytes;
  try {
    bytes = read_checkpoint_file((fs::path(dir) / name).string());
  } catch (const FileError& e) {
    throw CheckpointError(e.what());
  }
  check_against_manifest(manifest, dir, name, bytes);
  return bytes;
}

std::string save_run_id(const std::string& dir) {
  const Manifest manifest = read_manifest(dir);
  if (manifest.present) return manifest.run_id;
  const std::string path = (fs::path(dir) / "config.json").string();
  json config;
  try {
    config = parse_json_no_duplicate_keys(read_checkpoint_file(path));
  } catch (const std::exception& e) {
    throw CheckpointError(fmt::format("{}: {}", path, e.what()));
  }
  const json training = config.is_object() ? config.value("training", json::object()) : json();
  if (training.is_object() && training.contains("run_id") && training["run_id"].is_string())
    return training["run_id"].get<std::string>();
  return "";
}

void verify_save(const std::string& dir) {
  const Manifest manifest = read_manifest(dir);
  for (const auto& [name, entry] : manifest.files) {
    const std::string path = (fs::path(dir) / name).string();
    std::string bytes;
    try {
      bytes = read_checkpoint_file(path);
    } catch (const FileError& e) {
      throw CheckpointError(fmt::format("{} (listed in the save's {})", e.what(), kManifestFile));
    }
    check_against_manifest(manifest, dir, name, bytes);
  }
}

}  // namespace glass
