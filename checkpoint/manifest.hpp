#pragma once
// The manifest of a save: DIR/step-NNNNNN/manifest.json lists every other file of the save with
// its size and SHA-256, the run id and the step, so that a reader can tell a save exactly as
// glass train wrote it from one with a flipped bit, a hand edit or a file of another save.
//
//   {"format": "glass-save-manifest", "version": 1, "run_id": "3f9c...", "step": 250,
//    "files": {"config.json": {"bytes": 1234, "sha256": "9a0b..."}, "model.safetensors": {...}, ...}}
//
// The trainer writes it last (atomically), after every other file of the save and before the
// switch of `current`: a save without it never became current. Readers check the bytes of each
// file they use against it before using them (docs/checkpoints.md, "Saves verificados").

#include <map>
#include <string>
#include <vector>

namespace glass {

/// The manifest's file name inside a save.
inline constexpr const char* kManifestFile = "manifest.json";

/// One file of a save as the manifest records it.
struct ManifestEntry {
  std::size_t bytes = 0;
  std::string sha256;  // 64 lowercase hexadecimal digits
};

/// A save's manifest as read from disk.
struct Manifest {
  bool present = false;  // false: the directory has no manifest.json
  std::string run_id;
  long step = -1;
  std::map<std::string, ManifestEntry> files;
};

/// Writes SAVE_DIR/manifest.json (atomically) listing every other regular file of SAVE_DIR with
/// its size and SHA-256 (each file read back from disk), `run_id` and `step`. Throws FileError
/// when a file cannot be read or the manifest cannot be written.
void write_manifest(const std::string& save_dir, const std::string& run_id, long step);

/// Reads DIR/manifest.json; `present` is false when there is none. Throws CheckpointError when
/// it is not a manifest (bad JSON, a duplicate key, missing or mistyped fields, a file name
/// with a '/').
Manifest read_manifest(const std::string& dir);

/// Checks `bytes`, the content of DIR/`name` as just read, against `manifest`. Throws
/// CheckpointError naming the file when the manifest does not list it or its size or SHA-256
/// differs ("... was changed after glass train wrote it"). Does nothing when the manifest is
/// absent (`present` false).
void check_against_manifest(const Manifest& manifest, const std::string& dir,
                            const std::string& name, const std::string& bytes);

/// The run a save belongs to: its manifest's run id, or (a save without a manifest)
/// config.json's "training": {"run_id"}; "" when neither records one. Throws CheckpointError
/// when the manifest or config.json cannot be read. Readers that walk the step directories of a
/// run directory compare it with the current save's to leave out the saves of another run
/// (`glass train --overwrite` leaves the old run's pinned or stranded saves in place).
std::string save_run_id(const std::string& dir);

/// DIR/NAME read within its size limit (read_checkpoint_file) and checked against DIR's
/// manifest (check_against_manifest; nothing to check without one), for a reader to parse.
/// Throws CheckpointError when it cannot be read, is too large, or differs from the manifest.
std::string read_verified_file(const std::string& dir, const std::string& name);

/// Reads every file the manifest of DIR lists and checks it (check_against_manifest). Throws
/// CheckpointError for a missing or changed file. Does nothing when DIR has no manifest.
void verify_save(const std::string& dir);

}  // namespace glass
