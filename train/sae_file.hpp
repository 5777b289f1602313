#pragma once
// The file of a trained sparse autoencoder, beside the checkpoint it was trained on:
//
//   NAME.safetensors   W_enc (F, D), b_enc (F), W_dec (F, D), b_pre (D), float32
//   NAME.json          its own manifest, written last (atomically):
//     {"format": "glass-sae", "version": 1, "point": "layers.1.out",
//      "d_model": 128, "n_latents": 1024, "k": 16,
//      "model": {"weights": "model.safetensors", "sha256": "...", "run_id": "...", "step": "..."},
//      "files": {"NAME.safetensors": {"bytes": N, "sha256": "..."}},
//      "training": {options and figures}}
//
// The model's weights are pinned by their SHA-256, so an SAE is never used on a model it was not
// trained on; the save's own manifest is never touched.

#include <string>

#include <nlohmann/json.hpp>

#include "checkpoint/checkpoint.hpp"
#include "interp/sae.hpp"

namespace glass {

/// An SAE file that cannot be used: missing, corrupt, changed since it was written, of another
/// model or of another point. The message says which and what.
class SaeFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// NAME.json for an SAE file NAME.safetensors (or PATH + ".json" for another name).
std::string sae_manifest_path(const std::string& safetensors_path);

/// SHA-256 of the weights file the checkpoint was loaded from (its model.safetensors).
std::string model_weights_sha256(const Checkpoint& loaded);

/// Writes `path` (safetensors) and its manifest (sae_manifest_path), each atomically, the
/// manifest last. `training` (a JSON object) is recorded as "training". Throws FileError.
void save_sae(const std::string& path, const SparseAutoencoder& sae, const std::string& point,
              const Checkpoint& loaded, const nlohmann::json& training);

/// An SAE read back, with what its manifest records.
struct LoadedSae {
  std::unique_ptr<SparseAutoencoder> sae;
  std::string point;
  nlohmann::json manifest;
};

/// Reads `path` and its manifest and checks them: the manifest's format, the file's size and
/// SHA-256, the tensors' shapes; that the model's weights are those it pins
/// (model_weights_sha256), that its point exists in the model and, when `point` is not empty,
/// that it is `point`. Throws SaeFileError.
LoadedSae load_sae(const std::string& path, const Checkpoint& loaded,
                   const std::string& point = "");

}  // namespace glass
