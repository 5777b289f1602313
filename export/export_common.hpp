#pragma once
// What the exporters (export_gguf.hpp, export_llama2c.hpp) share: their error type and the facts
// about a checkpoint that its weights do not hold.

#include <cstddef>
#include <stdexcept>
#include <string>

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

}  // namespace glass
