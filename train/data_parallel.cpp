// Data parallelism over threads for a training step. See train/data_parallel.hpp.

#include "train/data_parallel.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <optional>
#include <stdexcept>

#include "autograd/ops.hpp"
#include "autograd/tape.hpp"
#include "autograd/threads.hpp"

namespace glass {

namespace {

/// How many DataParallel objects with more than one thread exist (BLAS runs single-threaded
/// while there is any).
std::atomic<int> live_multi_threaded{0};

/// Rows [begin, end) of a (B, T) array of ids.
Ids rows(const Ids& ids, std::size_t begin, std::size_t end) {
  const std::size_t T = ids.shape()[1];
  Ids part = Ids::from_shape({end - begin, T});
  std::copy(ids.data() + begin * T, ids.data() + end * T, part.data());
  return part;
}

/// Copies every parameter value of `from` into `to` (same config, same parameter order).
void copy_weights(const Decoder& from, Decoder& to) {
  if (to.config().ops_path != from.config().ops_path) to.set_ops_path(from.config().ops_path);
  const std::vector<Tensor> src = from.parameters();
  std::vector<Tensor> dst = to.parameters();
  for (std::size_t p = 0; p < src.size(); ++p)
    std::copy(src[p].value().data(), src[p].value().data() + src[p].size(), dst[p].value().data());
}

/// Part `part` of `parts` of the weight copy from the model into every replica: the elements
/// [n * part / parts, n * (part + 1) / parts) of every parameter of n elements.
void copy_weights_part(const std::vector<Tensor>& from, std::vector<std::vector<Tensor>>& to,
                       std::size_t part, std::size_t parts) {
  for (std::size_t p = 0; p < from.size(); ++p) {
    const std::size_t n = from[p].size(), begin = n * part / parts, end = n * (part + 1) / parts;
    const Scalar* src = from[p].value().data();
    for (std::vector<Tensor>& replica : to)
      std::copy(src + begin, src + end, replica[p].value().data() + begin);
  }
}

}  // namespace

DataParallel::DataParallel(Decoder& model, std::size_t threads)
    : model_(model), threads_(std::max<std::size_t>(threads, 1)) {
  for (std::size_t i = 1; i < threads_; ++i) {
    replicas_.push_back(std::make_unique<Decoder>(model.config(), 0));
    copy_weights(model, *replicas_.back());
  }
  if (threads_ > 1 && live_multi_threaded.fetch_add(1) == 0) set_blas_threads(1);
}

DataParallel::~DataParallel() {
  // The last multi-threaded instance gives the BLAS library its threads back.
  if (threads_ > 1 && live_multi_threaded.fetch_sub(1) == 1) set_blas_threads(num_threads());
}

double DataParallel::loss_and_grad(const Ids& x, const Ids& y) { return run(x, y, true); }

double DataParallel::loss(const Ids& x, const Ids& y) { return run(x, y, false); }

double DataParallel::run(const Ids& x, const Ids& y, bool with_grad) {
  if (shape_of(x) != shape_of(y))  // (the parts below are cut by x's rows)
    throw std::invalid_argument("DataParallel: the inputs " + shape_str(shape_of(x)) +
                                " and the targets " + shape_str(shape_of(y)) + " differ in shape");
  const std::size_t B = x.dimension() == 2 ? x.shape()[0] : 1;
  const std::size_t parts = std::min(threads_, B);
  if (parts <= 1) {  // one thread: the model itself, as without this class
    std::optional<NoGradGuard> no_grad;
    if (!with_grad) no_grad.emplace();
    if (with_grad)
      for (Tensor& p : model_.parameters()) p.zero_grad();
    Tensor loss = cross_entropy(model_.forward(x), y);
    const double value = loss.item();
    if (!with_grad) return value;
    if (!std::isfinite(value)) {
      tape().clear();
      return value;
    }
    loss.backward();
    return value;
  }

  // Part i: rows [B * i / parts, B * (i + 1) / parts), on replica i, in thread i. Each thread
  // runs its backward as soon as its own loss is known and finite (no wait for the others); the
  // one barrier of the step comes before the gradients are summed.
  std::vector<double> losses(parts, 0.0);
  std::vector<std::exception_ptr> errors(parts);
  bool go_on = true;          // every part's loss is known and the total is finite
  bool team_complete = true;  // the runtime gave one thread per part
  std::vector<Tensor> params = model_.parameters();
  std::vector<std::vector<Tensor>> others;  // the replicas' parameters, in the same order
  for (std::size_t r = 0; r + 1 < parts; ++r) {
    Decoder& replica = *replicas_[r];
    if (replica.config().ops_path != model_.config().ops_path)
      replica.set_ops_path(model_.config().ops_path);
    others.push_back(replica.parameters());
  }
  std::vector<Scalar*> sums;                     // per parameter with a gradient: the model's
  std::vector<std::vector<const Scalar*>> adds;  // ... and the replicas' gradients
  std::vector<long> sizes;
  // Room for every list before the threads start: the single block below allocates nothing
  // (an exception must not leave an OpenMP region).
  sums.reserve(params.size());
  sizes.reserve(params.size());
  adds.resize(params.size());
  for (std::vector<const Scalar*>& a : adds) a.reserve(others.size());
#pragma omp parallel num_threads(static_cast <int>(parts))
  {
    // The team size is the same for every thread, so all take the same branch (and barriers).
    if (static_cast<std::size_t>(omp_get_num_threads()) != parts) {
#pragma omp single
      team_complete = false;
    } else {
      const std::size_t i = static_cast<std::size_t>(omp_get_thread_num());
      Decoder& replica = i == 0 ? model_ : *replicas_[i - 1];
      const std::size_t begin = B * i / parts, end = B * (i + 1) / parts;
      // The model's weights into the replicas, every thread a part of every parameter.
      copy_weights_part(params, others, i, parts);
#pragma omp barrier
      Tensor loss;
      bool finite = false;
      {
        std::optional<NoGradGuard> no_grad;  // recording is per thread: each one says it
        if (!with_grad) no_grad.emplace();
        try {
          if (with_grad)
            for (Tensor& p : replica.parameters()) p.zero_grad();
          const Scalar share = static_cast<Scalar>(end - begin) / static_cast<Scalar>(B);
          loss = cross_entropy(replica.forward(rows(x, begin, end)), rows(y, begin, end)) * share;
          losses[i] = loss.item();
          finite = std::isfinite(losses[i]);
        } catch (...) {
          errors[i] = std::current_exception();
        }
      }
      if (with_grad && finite) {
        try {
          loss.backward();
        } catch (...) {
          errors[i] = std::current_exception();
        }
      } else if (with_grad) {
        tape().clear();
      }
#pragma omp barrier
#pragma omp single
      {
        double total = 0;
        for (std::size_t j = 0; j < parts; ++j) {
          total += losses[j];
          if (errors[j]) go_on = false;
        }
        if (!std::isfinite(total)) go_on = false;
        // A non-finite loss leaves no gradient behind (the finite parts ran their backward).
        if (with_grad && !go_on)
          for (Tensor& p : params) p.zero_grad();
        if (with_grad && go_on)
          for (std::size_t p = 0; p < params.size(); ++p) {
            if (!params[p].has_grad()) continue;
            std::vector<const Scalar*>& add = adds[sums.size()];  // (room reserved above)
            sums.push_back(params[p].grad().data());
            for (const std::vector<Tensor>& replica : others)
              if (replica[p].has_grad()) add.push_back(replica[p].grad().data());
            sizes.push_back(static_cast<long>(params[p].size()));
          }
      }  // (an implicit barrier: every thread sees go_on and the lists)

      // The replicas' gradients summed into the model's, each parameter split into one block
      // of elements per thread (every element summed in replica order: the same bits on every
      // run). One replica at a time over the block, so that the loop vectorizes.
      for (std::size_t p = 0; p < sums.size(); ++p) {
        const std::size_t n = static_cast<std::size_t>(sizes[p]);
        const std::size_t begin = n * i / parts, end = n * (i + 1) / parts;
        Scalar* __restrict g = sums[p];
        for (const Scalar* __restrict other : adds[p])
          for (std::size_t j = begin; j < end; ++j) g[j] += other[j];
      }
    }
  }
  if (!team_complete)
    throw std::runtime_error("DataParallel: the OpenMP runtime gave fewer than " +
                             std::to_string(parts) + " threads (is OMP_THREAD_LIMIT set?)");
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  double total = 0;
  for (double l : losses) total += l;
  return total;
}

}  // namespace glass
