// --quantize (see quantize_option.hpp).

#include "cli/quantize_option.hpp"

#include "cli/suggest.hpp"

namespace glass::cli {

void add_quantize_option(CLI::App* cmd, std::string& type) {
  cmd->add_option("--quantize", type,
                  "run on the weights quantized as glass export --type writes them and read back: "
                  "q8_0 (8.5 bits per weight), q4_0 (4.5) or f16; norm gains stay f32, rows not "
                  "a multiple of 32 long go to f16")
      ->transform(one_of({"q8_0", "q4_0", "f16"}, "quantization type"));
}

}  // namespace glass::cli
