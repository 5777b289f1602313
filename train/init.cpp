// Initialisations on top of the Decoder's own. See train/init.hpp.

#include "train/init.hpp"

#include <algorithm>

namespace glass {

void zero_output_projections(Decoder& model) {
  for (auto& block : model.layers)
    for (Tensor* w : {&block->attention.wo.weight, &block->feed_forward.w2.weight})
      std::fill(w->value().begin(), w->value().end(), Scalar(0));
}

}  // namespace glass
