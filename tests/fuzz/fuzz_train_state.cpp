// Fuzzes the reader of a checkpoint's training state (train/train_state.hpp, load_train_state).
// The input holds both files of the state: train_state.json, a NUL byte, then
// train_state.safetensors (JSON text has no NUL; without one, the moments file is empty).
// They are written into a scratch checkpoint directory (with a config.json that records no
// step) and read back for an optimizer of two small parameters. load_train_state must either
// throw CheckpointError (any other exception or a crash is a failure) or fill every moment with
// finite values and the optimizer's step with the state's step.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.hpp"
#include "train/adamw.hpp"
#include "checkpoint/checkpoint.hpp"
#include "train/train_state.hpp"

namespace {

/// An optimizer of a 2x3 matrix "w" and a 3-vector "g", moments at a marker value.
glass::AdamW make_optimizer() {
  glass::Array w = xt::zeros<glass::Scalar>({2, 3});
  glass::Array g = xt::zeros<glass::Scalar>({3});
  glass::AdamW opt({{"w", glass::Tensor(w, true)}, {"g", glass::Tensor(g, true)}});
  for (glass::AdamWParam& p : opt.params()) {
    p.m.fill(-7);
    p.v.fill(-7);
  }
  return opt;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.find('\0');
  const std::string json_text = input.substr(0, nul);
  const std::string moments = nul == std::string::npos ? std::string() : input.substr(nul + 1);

  const std::string& dir = glass::fuzz::scratch_dir();
  static const bool config_written = [&] {
    glass::fuzz::write_plain(dir + "/config.json", "{}\n");
    return true;
  }();
  (void)config_written;
  glass::fuzz::write_plain(dir + "/train_state.json", json_text);
  glass::fuzz::write_plain(dir + "/train_state.safetensors", moments);

  glass::AdamW opt = make_optimizer();
  glass::TrainState state;
  try {
    state = glass::load_train_state(dir, opt);
  } catch (const glass::CheckpointError&) {
    return 0;
  }
  GLASS_FUZZ_CHECK(state.step >= 0);
  GLASS_FUZZ_CHECK(opt.step_count() == state.step);
  for (const glass::AdamWParam& p : opt.params()) {
    for (glass::Scalar x : p.m) GLASS_FUZZ_CHECK(std::isfinite(x));
    for (glass::Scalar x : p.v) GLASS_FUZZ_CHECK(std::isfinite(x));
  }
  return 0;
}
