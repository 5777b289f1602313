#pragma once
// The flag of the commands that run a model on quantized weights: --quantize q8_0|q4_0|f16
// (export/quantize_model.hpp).

#include <string>

#include <CLI/CLI.hpp>

namespace glass::cli {

/// Adds --quantize to `cmd`, stored in `type` ("" = not given: the float weights): the weights
/// quantized to q8_0, q4_0 or f16 and read back in memory, with the GGUF exporter's rules. An
/// unknown type is refused with a did-you-mean.
void add_quantize_option(CLI::App* cmd, std::string& type);

}  // namespace glass::cli
