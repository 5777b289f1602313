#pragma once
// Building blocks for the files of a checkpoint directory, shared by the model files
// (checkpoint.cpp) and the training state (train/train_state.cpp): tensors in and out of
// safetensors, JSON files, and one error type (CheckpointError) for every way a file can be bad.

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "autograd/tensor.hpp"
#include "checkpoint/atomic_file.hpp"
#include "checkpoint/checkpoint.hpp"
#include "checkpoint/config_json.hpp"
#include "checkpoint/manifest.hpp"
#include "checkpoint/safetensors.hpp"

namespace glass::checkpoint_files {

/// DIR/FILE as a path string.
inline std::string path_in(const std::string& dir, const std::string& file) {
  return (std::filesystem::path(dir) / file).string();
}

/// `value` as a float32 tensor named `name`, for save_safetensors.
NamedTensor to_named(const std::string& name, const Array& value);

/// Copies the F32 tensor `name` of `file` (read from `source`, named in messages) into `target`,
/// checking presence, dtype, shape and that every value is finite. Throws CheckpointError.
void copy_into(const SafetensorsContents& file, const std::string& source, const std::string& name,
               Array& target);

/// Runs `f`, turning the I/O and format errors of the helpers (FileError, SafetensorsError,
/// ConfigError, JSON errors) into CheckpointError with the same message.
template <class F>
auto as_checkpoint_error(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const CheckpointError&) {
    throw;
  } catch (const FileError& e) {
    throw CheckpointError(e.what());
  } catch (const SafetensorsError& e) {
    throw CheckpointError(e.what());
  } catch (const ConfigError& e) {
    throw CheckpointError(e.what());
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(e.what());
  }
}

/// The JSON of the file at `path`. Throws CheckpointError when it cannot be read, is not JSON or
/// repeats a key.
nlohmann::json read_json(const std::string& path);

/// config.json's "training": {"run_id"}, or "" when absent.
std::string config_run_id(const nlohmann::json& config);

/// Refuses two files of one checkpoint that record different run ids (or one records a run id
/// and the other none): they come from two runs (e.g. two trainers on one directory, or files
/// copied by hand). Throws CheckpointError naming both files.
void check_same_run(const std::string& dir, const std::string& file_a, const std::string& id_a,
                    const std::string& file_b, const std::string& id_b);

/// Checks that the files of one save agree: the manifest (when present) and the weights record
/// the same run and step, config.json's "training" block (`training`) records the weights'
/// step and a context no larger than the model's context_length, and a save whose config.json
/// says it has a manifest has one. Throws CheckpointError naming the file.
void check_save_consistency(const std::string& dir, const Manifest& manifest,
                            const nlohmann::json& training, const std::string& weights_run_id,
                            const std::string& weights_step, const ModelConfig& model);

}  // namespace glass::checkpoint_files
