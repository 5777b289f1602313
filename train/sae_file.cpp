// Writing and reading the file of a sparse autoencoder (see sae_file.hpp).

#include "train/sae_file.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "checkpoint/atomic_file.hpp"
#include "checkpoint/safetensors.hpp"
#include "checkpoint/sha256.hpp"
#include "train/sae_trainer.hpp"

namespace glass {

namespace {

constexpr const char* kFormat = "glass-sae";
constexpr int kVersion = 1;

NamedTensor named(const std::string& name, const Tensor& t) {
  const Array& v = t.value();
  return {name, std::vector<std::size_t>(v.shape().begin(), v.shape().end()),
          std::vector<float>(v.begin(), v.end())};
}

/// Copies tensor `name` of `file` into `into` after checking its shape.
void read_tensor(const SafetensorsContents& file, const std::string& name, Tensor& into,
                 const std::string& path) {
  const NamedTensor* t = file.find(name);
  const auto& want = into.value().shape();
  if (!t || t->dtype != Dtype::F32 ||
      !std::equal(t->shape.begin(), t->shape.end(), want.begin(), want.end()))
    throw SaeFileError(fmt::format("{}: tensor {} is missing or not float32 of shape {}", path,
                                   name, shape_str(Shape(want.begin(), want.end()))));
  std::copy(t->data.begin(), t->data.end(), into.value().begin());
}

}  // namespace

std::string sae_manifest_path(const std::string& safetensors_path) {
  std::filesystem::path p(safetensors_path);
  if (p.extension() == ".safetensors") return p.replace_extension(".json").string();
  return safetensors_path + ".json";
}

std::string model_weights_sha256(const Checkpoint& loaded) {
  return sha256_hex(read_checkpoint_file(loaded.files_dir() + "/model.safetensors"));
}

void save_sae(const std::string& path, const SparseAutoencoder& sae, const std::string& point,
              const Checkpoint& loaded, const nlohmann::json& training) {
  const std::string bytes =
      safetensors_serialize({named("W_enc", sae.W_enc), named("b_enc", sae.b_enc),
                             named("W_dec", sae.W_dec), named("b_pre", sae.b_pre)},
                            {{"format", kFormat}, {"point", point}});
  write_file_atomic(path, bytes);
  nlohmann::json m;
  m["format"] = kFormat;
  m["version"] = kVersion;
  m["point"] = point;
  m["d_model"] = sae.d_model();
  m["n_latents"] = sae.n_latents();
  m["k"] = sae.k();
  m["model"] = {{"weights", "model.safetensors"},
                {"sha256", model_weights_sha256(loaded)},
                {"run_id", loaded.run_id()},
                {"step", loaded.weights_step()}};
  m["files"][std::filesystem::path(path).filename().string()] = {{"bytes", bytes.size()},
                                                                 {"sha256", sha256_hex(bytes)}};
  m["training"] = training;
  write_file_atomic(sae_manifest_path(path), m.dump(2) + "\n");
}

LoadedSae load_sae(const std::string& path, const Checkpoint& loaded, const std::string& point) {
  const std::string manifest_path = sae_manifest_path(path);
  LoadedSae out;
  std::string bytes;
  std::size_t d_model = 0, n_latents = 0, k = 0;
  nlohmann::json file_entry, model;
  try {
    out.manifest = nlohmann::json::parse(read_file(manifest_path));
    if (out.manifest.value("format", "") != kFormat || out.manifest.value("version", 0) != kVersion)
      throw SaeFileError(fmt::format("{} is not the manifest of a glass SAE (format {} {})",
                                     manifest_path, kFormat, kVersion));
    out.point = out.manifest.at("point").get<std::string>();
    d_model = out.manifest.at("d_model").get<std::size_t>();
    n_latents = out.manifest.at("n_latents").get<std::size_t>();
    k = out.manifest.at("k").get<std::size_t>();
    model = out.manifest.at("model");
    file_entry = out.manifest.at("files").at(std::filesystem::path(path).filename().string());
    bytes = read_file(path);
  } catch (const SaeFileError&) {
    throw;
  } catch (const std::exception& e) {
    throw SaeFileError(
        fmt::format("cannot read the SAE {} (manifest {}): {}", path, manifest_path, e.what()));
  }
  if (bytes.size() != file_entry.value("bytes", std::size_t{0}) ||
      sha256_hex(bytes) != file_entry.value("sha256", ""))
    throw SaeFileError(fmt::format(
        "{} differs from its manifest {} (size or SHA-256): it was changed or corrupted after "
        "glass sae train wrote it",
        path, manifest_path));
  if (model.value("sha256", "") != model_weights_sha256(loaded))
    throw SaeFileError(fmt::format(
        "{} was trained on another model (weights SHA-256 {}), not on the weights of {} ({}); "
        "train one for this model with glass sae train",
        path, model.value("sha256", "?").substr(0, 12), loaded.files_dir(),
        model_weights_sha256(loaded).substr(0, 12)));
  if (!point.empty() && point != out.point)
    throw SaeFileError(fmt::format("{} reads the point {}, not {}", path, out.point, point));
  try {
    sae_point_index(loaded.model(), out.point);
    Rng rng(0);
    out.sae = std::make_unique<SparseAutoencoder>(d_model, n_latents, k, rng);
  } catch (const std::invalid_argument& e) {
    throw SaeFileError(fmt::format("{}: {}", path, e.what()));
  }
  if (d_model != loaded.config().d_model)
    throw SaeFileError(fmt::format("{} reads d_model {}, the model has {}", path, d_model,
                                   loaded.config().d_model));
  SafetensorsContents file;
  try {
    file = safetensors_parse(bytes, path);
  } catch (const SafetensorsError& e) {
    throw SaeFileError(e.what());
  }
  read_tensor(file, "W_enc", out.sae->W_enc, path);
  read_tensor(file, "b_enc", out.sae->b_enc, path);
  read_tensor(file, "W_dec", out.sae->W_dec, path);
  read_tensor(file, "b_pre", out.sae->b_pre, path);
  return out;
}

}  // namespace glass
