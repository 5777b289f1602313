#pragma once
// The model the interp tests probe: the small fixed model of the PyTorch twin
// (tests/nn/twin_reference.hpp: vocab 11, d_model 16, 2 layers, 4 heads / 2 KV heads), on the
// reference path.

#include <memory>

#include "interp/interp.hpp"
#include "nn/twin_reference.hpp"

namespace interp_test {

inline std::unique_ptr<glass::Decoder> twin_model() {
  auto model = std::make_unique<glass::Decoder>(glass_test::twin_config(), 0);
  glass_test::set_reference_weights(*model);
  model->set_ops_path(glass::OpsPath::reference);
  return model;
}

/// The plain model's logits (B, T, vocab) without any tracer.
inline glass::Array plain_logits(const glass::Decoder& model, const glass::Ids& tokens) {
  glass::NoGradGuard no_grad;
  return model.forward(tokens).value();
}

}  // namespace interp_test
