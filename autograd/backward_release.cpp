#include "autograd/backward_release.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

namespace {
thread_local bool g_disposable = false;
}  // namespace

bool grad_disposable() { return g_disposable; }

void backward_and_release(Tape& tape, const Tensor& root) {
  seed_root(root);
  // Records later on the tape hold the earlier outputs they used; walking backwards and dropping
  // each record once it has run leaves an output held by its own record only, unless the caller
  // (or a tensor that outlives the step) holds it too: use_count() == 1 means nobody can read
  // its gradient after this closure.
  std::vector<TapeRecord> records = tape.take_records();
  struct ClearAtExit {  // also when a closure throws: the tape ends empty either way
    Tape& tape;
    ~ClearAtExit() {
      g_disposable = false;
      tape.clear();
    }
  } clear_at_exit{tape};
  for (auto it = records.rbegin(); it != records.rend(); ++it) {
    if (it->output.has_grad()) {
      g_disposable = it->output.use_count() == 1;
      tape.run_backward(*it);
      g_disposable = false;
    }
    *it = TapeRecord{};  // frees the closure's saved inputs, and the output if only we held it
  }
}

}  // namespace GLASS_PRECISION
}  // namespace glass
