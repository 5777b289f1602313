#pragma once
// What the exporters (export_gguf.hpp, export_llama2c.hpp) share: their error type and the facts
// about a checkpoint that its weights do not hold.

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "nn/config.hpp"

namespace glass {

/// A model the target format (or the engine that reads it) cannot represent, e.g. a RoPE base
/// other than the 10000 that llama2.c's run.c hard-codes. The message names the value and
/// what the target needs.
class ExportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Facts about the checkpoint that go into the exported file next to the weights.
struct ExportInfo {
  std::string name;         ///< model name (glass export uses the checkpoint directory's name)
  std::string step;         ///< training step of the weights ("" when unknown)
  std::size_t context = 0;  ///< training context T: the longest sequence the model was trained on
  std::string data;         ///< file name of the training text ("" when unknown)
};

/// Throws ExportError when `config` uses a recipe option (QK-norm, the ReLU² MLP, logit
/// soft-capping: recipe_options_in_use) that `engine` ("llama.cpp's `llama` architecture",
/// "llama2.c's run.c") does not compute: the exported file would load there and give other
/// numbers. The message names each option in use.
inline void refuse_recipe_options(const ModelConfig& config, const std::string& engine) {
  const std::vector<std::string> used = recipe_options_in_use(config);
  if (used.empty()) return;
  std::string list;
  for (std::size_t i = 0; i < used.size(); ++i)
    list += (i == 0 ? "" : i + 1 == used.size() ? " and " : ", ") + used[i];
  throw ExportError("this model uses " + list + ", which " + engine +
                    " does not compute (it has no QK-norm, no ReLU² MLP and no logit "
                    "soft-capping): the exported model would run there and give other numbers. "
                    "Only a model trained without these options can be exported");
}

}  // namespace glass
