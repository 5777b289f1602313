// Model and training-step sizes from the config alone. See checkpoint/model_size.hpp.

#include "checkpoint/model_size.hpp"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

namespace glass {

double parameter_count(const ModelConfig& c) {
  const double d = static_cast<double>(c.d_model);
  const double kv_width = static_cast<double>(c.n_kv_heads) * static_cast<double>(c.head_dim());
  const double ffn_matrices = c.mlp == Mlp::relu2 ? 2 : 3;  // w2, w3 (ReLU²) or w1, w2, w3
  const double per_layer = 2 * d                            // attention_norm, ffn_norm
                           + 2 * d * d                      // wq, wo
                           + 2 * kv_width * d               // wk, wv
                           + ffn_matrices * d * static_cast<double>(c.ffn_hidden);
  return 2 * static_cast<double>(c.vocab_size) * d           // tok_embeddings, output
         + static_cast<double>(c.n_layers) * per_layer + d;  // layers, norm
}

double training_memory_lower_bound(const ModelConfig& c, std::size_t batch, std::size_t context,
                                   std::size_t replicas) {
  constexpr double kFloat = 4;  // bytes of a float32
  const double bt = static_cast<double>(batch) * static_cast<double>(context);
  const double per_layer = 10 * static_cast<double>(c.d_model) +
                           3 * static_cast<double>(c.n_heads) * static_cast<double>(context) +
                           4 * static_cast<double>(c.ffn_hidden);
  const double activations =
      bt * (3 * static_cast<double>(c.vocab_size) + static_cast<double>(c.n_layers) * per_layer);
  return kFloat * ((4 + 2 * static_cast<double>(replicas)) * parameter_count(c) + activations);
}

double physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<double>(pages) * static_cast<double>(page_size);
}

double available_memory_bytes() {
  // /proc/meminfo: "MemAvailable:   12345678 kB" (Linux >= 3.14; see proc(5)).
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    double kb = 0;
    std::string unit;
    if (fields >> kb >> unit && unit == "kB" && kb > 0) return kb * 1024;
    break;
  }
  return physical_memory_bytes();
}

std::string format_bytes(double bytes) {
  if (bytes >= 1e9) return fmt::format("{:.3g} GB", bytes / 1e9);
  if (bytes >= 1e6) return fmt::format("{:.3g} MB", bytes / 1e6);
  return fmt::format("{:.3g} kB", bytes / 1e3);
}

}  // namespace glass
