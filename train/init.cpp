// Initialisations on top of the Decoder's own. See train/init.hpp.

#include "train/init.hpp"

#include <algorithm>
#include <string>

namespace glass {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

void zero_output_projections(Decoder& model) {
  // By name, so that every feed-forward (SwiGLU, ReLU²) is reached through its down projection.
  for (auto& [name, w] : model.named_parameters()) {
    if (ends_with(name, ".attention.wo.weight") || ends_with(name, ".feed_forward.w2.weight"))
      std::fill(w.value().begin(), w.value().end(), Scalar(0));
  }
}

}  // namespace glass
