// Fuzzes the config.json reader of a checkpoint (train/config_json.hpp). The input is the text
// of a config.json; it is also read as a bare "model" object. Each reader must either throw
// ConfigError (any other exception or a crash is a failure) or return a configuration that
// passes ModelConfig::validate() and writes and reads back to itself.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_util.hpp"
#include "checkpoint/config_json.hpp"

namespace {

bool same_model(const glass::ModelConfig& a, const glass::ModelConfig& b) {
  return a.vocab_size == b.vocab_size && a.d_model == b.d_model && a.n_layers == b.n_layers &&
         a.n_heads == b.n_heads && a.n_kv_heads == b.n_kv_heads && a.ffn_hidden == b.ffn_hidden &&
         a.context_length == b.context_length && a.vocab_cap == b.vocab_cap &&
         a.rope_base == b.rope_base && a.norm_eps == b.norm_eps && a.init_std == b.init_std;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const glass::CheckpointConfig config = glass::config_from_json(text, "fuzz/config.json");
    config.model.validate();
    GLASS_FUZZ_CHECK(config.tokenizer.vocab_size() == config.model.vocab_size);
    const std::string written = glass::config_to_json(config.model, config.tokenizer);
    const glass::CheckpointConfig back = glass::config_from_json(written, "round trip");
    GLASS_FUZZ_CHECK(same_model(back.model, config.model));
    GLASS_FUZZ_CHECK(back.tokenizer.chars() == config.tokenizer.chars());
  } catch (const glass::ConfigError& e) {
    GLASS_FUZZ_CHECK(std::strstr(e.what(), "fuzz/config.json") != nullptr);  // names the file
  }
  try {
    const glass::ModelConfig model = glass::model_config_from_json(text, "fuzz/model");
    model.validate();
    const glass::ModelConfig back =
        glass::model_config_from_json(glass::model_config_to_json(model), "round trip");
    GLASS_FUZZ_CHECK(same_model(back, model));
  } catch (const glass::ConfigError& e) {
    GLASS_FUZZ_CHECK(std::strstr(e.what(), "fuzz/model") != nullptr);
  }
  return 0;
}
