#include "autograd/parallel.hpp"

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace glass {
inline namespace GLASS_PRECISION {

namespace {

/// Set while a thread runs a chunk: a parallel_for inside it runs inline.
thread_local bool t_inside_parallel_for = false;

/// The workers of parallel_for. Each waits on a condition variable for a new loop (a new
/// `generation_`), runs its chunk, reports done and goes back to sleep.
class ThreadPool {
 public:
  ~ThreadPool() { resize(1); }

  std::size_t size() const { return workers_.size() + 1; }  // the workers plus the caller

  /// n threads in all: n - 1 workers (the caller is the n-th).
  void resize(std::size_t n) {
    std::lock_guard<std::mutex> one_loop(run_mutex_);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& w : workers_) w.join();
    workers_.clear();
    stop_ = false;
    // New workers wait for the NEXT loop: they start from the current generation.
    for (std::size_t i = 1; i < n; ++i)
      workers_.emplace_back([this, i, current = generation_] { work(i, current); });
  }

  /// Runs body over T = size() chunks of [0, n) and waits for all of them. One loop at a time:
  /// a second thread calling in waits for the first loop to end.
  void run(std::size_t n, const std::function<void(std::size_t, std::size_t)>& body) {
    std::lock_guard<std::mutex> one_loop(run_mutex_);
    const std::size_t T = size();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      body_ = &body;
      n_ = n;
      pending_ = T - 1;
      error_ = nullptr;
      ++generation_;
    }
    wake_.notify_all();
    std::exception_ptr mine;
    try {
      run_chunk(0, T, n, body);
    } catch (...) {
      mine = std::current_exception();
    }
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return pending_ == 0; });
    body_ = nullptr;
    if (mine) std::rethrow_exception(mine);
    if (error_) std::rethrow_exception(error_);
  }

 private:
  static void run_chunk(std::size_t i, std::size_t T, std::size_t n,
                        const std::function<void(std::size_t, std::size_t)>& body) {
    const std::size_t begin = n * i / T, end = n * (i + 1) / T;
    if (begin == end) return;
    t_inside_parallel_for = true;
    try {
      body(begin, end);
    } catch (...) {
      t_inside_parallel_for = false;
      throw;
    }
    t_inside_parallel_for = false;
  }

  void work(std::size_t index, std::size_t seen) {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      const auto* body = body_;
      const std::size_t n = n_, T = size();
      lock.unlock();
      std::exception_ptr error;
      try {
        run_chunk(index, T, n, *body);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      if (error && !error_) error_ = error;
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;  // held by run() and resize(): one loop (or resize) at a time
  std::mutex mutex_;      // guards the fields below
  std::condition_variable wake_, done_;
  const std::function<void(std::size_t, std::size_t)>* body_ = nullptr;
  std::size_t n_ = 0, pending_ = 0, generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

ThreadPool& pool() {
  static ThreadPool instance;
  return instance;
}

}  // namespace

void set_num_threads(std::size_t n) {
  if (n == 0) throw std::invalid_argument("set_num_threads: needs at least 1 thread");
  if (t_inside_parallel_for) throw std::logic_error("set_num_threads: called inside parallel_for");
  if (n != pool().size()) pool().resize(n);
}

std::size_t num_threads() { return pool().size(); }

void parallel_for(std::size_t n, std::size_t min_per_thread,
                  const std::function<void(std::size_t, std::size_t)>& body) {
  if (n == 0) return;
  if (t_inside_parallel_for || pool().size() == 1 || n < 2 * min_per_thread) {
    body(0, n);
    return;
  }
  pool().run(n, body);
}

}  // namespace GLASS_PRECISION
}  // namespace glass
