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

/// One thread: the loss of the model itself on x against y and, with_grad and when finite,
/// its gradients, exactly as forward + backward without DataParallel.
double loss_on_model(Decoder& model, const Ids& x, const Ids& y, bool with_grad) {
  std::optional<NoGradGuard> no_grad;
  if (!with_grad) no_grad.emplace();
  if (with_grad)
    for (Tensor& p : model.parameters()) p.zero_grad();
  Tensor loss = cross_entropy(model.forward(x), y);
  const double value = loss.item();
  if (!with_grad) return value;
  if (!std::isfinite(value)) {
    tape().clear();
    return value;
  }
  loss.backward();
  return value;
}

/// What the threads of one step share. Every list has its room before the threads start:
/// the `omp single` block that fills the gradient lists allocates nothing (an exception must
/// not leave an OpenMP region).
struct SharedStep {
  SharedStep(Decoder& model, const std::vector<std::unique_ptr<Decoder>>& replicas,
             std::size_t parts)
      : losses(parts, 0.0), errors(parts), params(model.parameters()) {
    for (std::size_t r = 0; r + 1 < parts; ++r) {
      Decoder& replica = *replicas[r];
      if (replica.config().ops_path != model.config().ops_path)
        replica.set_ops_path(model.config().ops_path);
      others.push_back(replica.parameters());
    }
    sums.reserve(params.size());
    sizes.reserve(params.size());
    adds.resize(params.size());
    for (std::vector<const Scalar*>& a : adds) a.reserve(others.size());
  }

  std::vector<double> losses;               // part i's loss, weighted by its share of targets
  std::vector<std::exception_ptr> errors;   // part i's error, if any
  bool go_on = true;                        // every part's loss is known and the total is finite
  std::vector<Tensor> params;               // the model's parameters
  std::vector<std::vector<Tensor>> others;  // the replicas' parameters, in the same order
  std::vector<Scalar*> sums;                // per parameter with a gradient: the model's
  std::vector<std::vector<const Scalar*>> adds;  // ... and the replicas' gradients
  std::vector<long> sizes;                       // ... and its element count
};

/// Part i's forward on `replica` (rows [begin, end) of B), its loss weighted by `share` (its
/// counted targets over the batch's) into step.losses[i], then its backward as soon as that loss is known and finite (no wait for
/// the others); a non-finite part clears its tape. Errors go to step.errors[i].
void run_part(SharedStep& step, std::size_t i, Decoder& replica, const Ids& x, const Ids& y,
              std::size_t begin, std::size_t end, Scalar share, bool with_grad) {
  Tensor loss;
  bool finite = false;
  {
    std::optional<NoGradGuard> no_grad;  // recording is per thread: each one says it
    if (!with_grad) no_grad.emplace();
    try {
      if (with_grad)
        for (Tensor& p : replica.parameters()) p.zero_grad();
      loss = cross_entropy(replica.forward(rows(x, begin, end)), rows(y, begin, end)) * share;
      step.losses[i] = loss.item();
      finite = std::isfinite(step.losses[i]);
    } catch (...) {
      step.errors[i] = std::current_exception();
    }
  }
  if (with_grad && finite) {
    try {
      loss.backward();
    } catch (...) {
      step.errors[i] = std::current_exception();
    }
  } else if (with_grad) {
    tape().clear();
  }
}

/// After every part (one thread): decides step.go_on, and either zeroes the model's gradients
/// (a non-finite loss or an error leaves no gradient behind; the finite parts ran their
/// backward) or lists, per parameter with a gradient, the model's and the replicas' gradients.
void list_gradients(SharedStep& step, bool with_grad) {
  double total = 0;
  for (std::size_t j = 0; j < step.losses.size(); ++j) {
    total += step.losses[j];
    if (step.errors[j]) step.go_on = false;
  }
  if (!std::isfinite(total)) step.go_on = false;
  if (with_grad && !step.go_on)
    for (Tensor& p : step.params) p.zero_grad();
  if (with_grad && step.go_on)
    for (std::size_t p = 0; p < step.params.size(); ++p) {
      if (!step.params[p].has_grad()) continue;
      std::vector<const Scalar*>& add = step.adds[step.sums.size()];  // (room reserved)
      step.sums.push_back(step.params[p].grad().data());
      for (const std::vector<Tensor>& replica : step.others)
        if (replica[p].has_grad()) add.push_back(replica[p].grad().data());
      step.sizes.push_back(static_cast<long>(step.params[p].size()));
    }
}

/// Thread i's block of the sum of the replicas' gradients into the model's: elements
/// [n * i / parts, n * (i + 1) / parts) of every listed parameter of n elements, every element
/// summed in replica order (the same bits on every run). One replica at a time over the block,
/// so that the loop vectorizes.
void sum_gradients_part(const SharedStep& step, std::size_t i, std::size_t parts) {
  for (std::size_t p = 0; p < step.sums.size(); ++p) {
    const std::size_t n = static_cast<std::size_t>(step.sizes[p]);
    const std::size_t begin = n * i / parts, end = n * (i + 1) / parts;
    Scalar* __restrict g = step.sums[p];
    for (const Scalar* __restrict other : step.adds[p])
      for (std::size_t j = begin; j < end; ++j) g[j] += other[j];
  }
}

}  // namespace

std::size_t counted_targets(const Ids& targets, int ignore_index) {
  return static_cast<std::size_t>(std::count_if(targets.begin(), targets.end(),
                                                [&](std::int32_t t) { return t != ignore_index; }));
}

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
  if (parts <= 1) return loss_on_model(model_, x, y, with_grad);

  // Part i: rows [B * i / parts, B * (i + 1) / parts), on replica i, in thread i. Each thread
  // runs its backward as soon as its own loss is known and finite (no wait for the others); the
  // one barrier of the step comes before the gradients are summed.
  SharedStep step(model_, replicas_, parts);
  // Part i's share of the loss: its counted targets over the batch's (rows_i / B when no target
  // is ignored: the same float as before masks existed; 0 for a part whose targets are all
  // ignored, whose loss and gradients are then 0).
  const std::size_t batch_count = counted_targets(y);
  std::vector<Scalar> shares(parts, 0);
  for (std::size_t i = 0; i < parts; ++i)
    if (batch_count > 0)
      shares[i] =
          static_cast<Scalar>(counted_targets(rows(y, B * i / parts, B * (i + 1) / parts))) /
          static_cast<Scalar>(batch_count);
  bool team_complete = true;  // the runtime gave one thread per part
#pragma omp parallel num_threads(static_cast <int>(parts))
  {
    // The team size is the same for every thread, so all take the same branch (and barriers).
    if (static_cast<std::size_t>(omp_get_num_threads()) != parts) {
#pragma omp single
      team_complete = false;
    } else {
      const std::size_t i = static_cast<std::size_t>(omp_get_thread_num());
      Decoder& replica = i == 0 ? model_ : *replicas_[i - 1];
      // The model's weights into the replicas, every thread a part of every parameter.
      copy_weights_part(step.params, step.others, i, parts);
#pragma omp barrier
      run_part(step, i, replica, x, y, B * i / parts, B * (i + 1) / parts, shares[i], with_grad);
#pragma omp barrier
#pragma omp single
      list_gradients(step, with_grad);
      // (the single's implicit barrier: every thread sees go_on and the lists)
      sum_gradients_part(step, i, parts);
    }
  }
  if (!team_complete)
    throw std::runtime_error("DataParallel: the OpenMP runtime gave fewer than " +
                             std::to_string(parts) + " threads (is OMP_THREAD_LIMIT set?)");
  for (const std::exception_ptr& e : step.errors)
    if (e) std::rethrow_exception(e);
  double total = 0;
  for (double l : step.losses) total += l;
  return total;
}

}  // namespace glass
