// Whole-step timings of GlassLLM, the counterpart of the PyTorch twin's bench.py
// (bench/torch_twin/bench.py): same model (default ModelConfig, vocab 65), same measurements.
//
//   bench_train_step [--threads N] [--shapes 12x64,8x256] [--warmup 10] [--steps 40]
//                    [--gen_tokens 200] [--gen_reps 7] [--no_gen] [--no_train] [--cache_only]
//                    [--long_tokens 2000] [--long_window 64] [--long_reps 3] [--exact_tokens 0]
//                    [--sgemm_n 2048] [--profile N] [--ops fast|reference]
//
// train_step: zero_grad + forward + cross-entropy + backward (DataParallel::loss_and_grad, on
//             --threads threads as `glass train`) + clip_grad_norm(1.0) + AdamW.step (the
//             Trainer's step), on 8 pre-built random batches, `--warmup` untimed steps then
//             `--steps` timed ones; forward+backward and clip+AdamW are timed in the same steps.
//             Resident memory (/proc/self/statm) is read after the warmup and after the last
//             step (growth = tape or buffers not freed) and the peak (getrusage) after each shape.
// generate:   200 new tokens from a 1-token prompt (id 0), greedy, with and without the KV
//             cache, `--gen_reps` timed repetitions after one warm-up; checks both give the
//             same tokens. The context is the model's (256), so it never slides.
// long generation: `--long_tokens` (2000) new tokens from a 1-token prompt, greedy, with a
//             window of `--long_window` (64, the training context of `glass train`'s recipe,
//             which `glass sample` uses): past it the rolling KV cache (WindowMode::rolling, the
//             default of `glass sample`), `--long_reps` timed runs after one warm-up.
//             `--exact_tokens N` (0 = off) also times N tokens in WindowMode::exact, once.
// sgemm:      the machine's practical matrix-product limit: cblas_sgemm of two n x n matrices
//             (n = --sgemm_n, 2048) with OpenBLAS at --threads threads, best of 5, in GFLOP/s;
//             each training shape reports its step time over (its FLOPs / that rate).
// --profile N: after the timed steps, N more steps with the tape's per-op profiler
//             (OpProfiler, autograd/profiler.hpp), printed as a table of ms per step per op, largest first.
// --threads N: glass::set_num_threads(N), as `glass train --threads N`.
// --ops (formerly --attention) picks ModelConfig::ops_path: "fast" (the default, as glass train) or "reference".
// Prints a human summary and one JSON line prefixed with 'RESULT ' (same keys as bench.py).

#include <cblas.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autograd/blas_core.hpp"
#include "autograd/ops.hpp"
#include "autograd/profiler.hpp"
#include "autograd/threads.hpp"
#include "nn/decoder.hpp"
#include "train/adamw.hpp"
#include "train/clip.hpp"
#include "train/data_parallel.hpp"
#include "cli/malloc_tuning.hpp"
#include "sample/sampler.hpp"

using namespace glass;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

json stats(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const std::size_t n = xs.size();
  const double median = n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
  return {{"median", median}, {"min", xs.front()}, {"max", xs.back()}, {"n", n}};
}

/// Resident set size now, in MB (second field of /proc/self/statm, in pages).
double rss_mb() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return static_cast<double>(pages_resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) /
         1048576.0;
}

/// Peak resident set size of the process so far, in MB (getrusage ru_maxrss, in kB on Linux).
double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

/// Same count of floating-point operations as bench.py's flops_per_step (dense + attention).
double flops_per_step(const ModelConfig& c, double B, double T) {
  const double d = c.d_model, L = c.n_layers, V = c.vocab_size, F = c.ffn_hidden;
  const double Hkv = c.n_kv_heads, D = c.head_dim(), H = c.n_heads;
  const double n_mm = L * (d * d + 2 * d * Hkv * D + d * d + 3 * d * F) + d * V;
  return 6 * n_mm * B * T + 3 * L * (2 * 2 * B * H * T * T * D);
}

struct Options {
  int threads = 1;
  std::string shapes = "12x64,8x256";
  int warmup = 10, steps = 40, gen_tokens = 200, gen_reps = 7;
  int long_tokens = 2000, long_window = 64, long_reps = 3, exact_tokens = 0;
  int sgemm_n = 2048;
  bool no_gen = false, no_train = false, cache_only = false;
  int profile = 0;                 // extra steps run with the tape's per-op profiling (0 = none)
  std::string attention = "fast";  // ModelConfig::ops_path: the path measured
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "bench_train_step: " << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    auto number = [&]() {
      const std::string v = value();
      try {
        const int n = std::stoi(v);
        if (n >= 0) return n;
      } catch (...) {}
      std::cerr << "bench_train_step: " << a << " needs a non-negative integer, got '" << v
                << "'\n";
      std::exit(2);
    };
    if (a == "--threads")
      o.threads = number();
    else if (a == "--shapes")
      o.shapes = value();
    else if (a == "--warmup")
      o.warmup = number();
    else if (a == "--steps")
      o.steps = number();
    else if (a == "--gen_tokens")
      o.gen_tokens = number();
    else if (a == "--gen_reps")
      o.gen_reps = number();
    else if (a == "--no_gen")
      o.no_gen = true;
    else if (a == "--no_train")
      o.no_train = true;
    else if (a == "--cache_only")
      o.cache_only = true;  // generation with the KV cache only
    else if (a == "--long_tokens")
      o.long_tokens = number();
    else if (a == "--long_window")
      o.long_window = number();
    else if (a == "--long_reps")
      o.long_reps = number();
    else if (a == "--exact_tokens")
      o.exact_tokens = number();
    else if (a == "--sgemm_n")
      o.sgemm_n = number();
    else if (a == "--profile")
      o.profile = number();
    else if (a == "--ops" || a == "--attention")  // --attention: its former name
      o.attention = value();
    else {
      std::cerr << "bench_train_step: unknown option '" << a
                << "' (see the comment at the top of "
                   "bench/bench_train_step.cpp)\n";
      std::exit(2);
    }
  }
  if (o.threads < 1 || o.steps < 1 || o.gen_reps < 1 || o.gen_tokens < 1 || o.long_window < 1 ||
      o.long_reps < 1) {
    std::cerr << "bench_train_step: --threads, --steps, --gen_reps, --gen_tokens, --long_window "
                 "and --long_reps must be >= 1\n";
    std::exit(2);
  }
  return o;
}

/// `steps` more training steps with the tape's per-op profiling on (after the timed ones, so
/// the clock reads do not touch the timings above). Prints a table of milliseconds per step
/// for each op's forward and backward, largest first, and returns it as JSON. The forward time
/// of an op is the time since the previous recorded op (see OpProfiler); the
/// clipping + AdamW step is timed separately.
json profile_steps(const Decoder& model, AdamW& optimizer, const std::vector<Tensor>& params,
                   const std::vector<std::pair<Ids, Ids>>& batches, int steps) {
  OpProfiler profiler;
  double optim_s = 0, total_s = 0;
  for (int s = 0; s < steps; ++s) {
    const auto& [x, y] = batches[static_cast<std::size_t>(s) % batches.size()];
    const auto t0 = Clock::now();
    optimizer.zero_grad();
    tape().set_observer(&profiler);
    profiler.restart_clock();  // zero_grad is not charged to an op
    Tensor loss = cross_entropy(model.forward(x), y);
    loss.backward();
    tape().set_observer(nullptr);
    const auto t1 = Clock::now();
    clip_grad_norm(params, 1.0);
    optimizer.step(1e-3);
    optim_s += seconds_since(t1);
    total_s += seconds_since(t0);
  }
  std::vector<std::pair<std::string, OpProfile>> rows(profiler.profile().begin(),
                                                      profiler.profile().end());
  auto ms = [](const OpProfile& p) { return p.forward_ms + p.backward_ms; };
  std::sort(rows.begin(), rows.end(),
            [&](const auto& a, const auto& b) { return ms(a.second) > ms(b.second); });
  const double n = steps, step_ms = total_s * 1e3 / n;
  std::printf("  per-op profile over %d steps (ms per step; share of the %.2f ms step):\n", steps,
              step_ms);
  std::printf("  %-20s %8s %8s %8s %7s %6s\n", "op", "forward", "backward", "total", "share",
              "calls");
  json out = json::object();
  for (const auto& [name, p] : rows) {
    std::printf("  %-20s %8.2f %8.2f %8.2f %6.1f%% %6.0f\n", name.c_str(), p.forward_ms / n,
                p.backward_ms / n, ms(p) / n, 100 * ms(p) / n / step_ms, p.forward_calls / n);
    out[name] = {{"forward_ms_per_step", p.forward_ms / n},
                 {"backward_ms_per_step", p.backward_ms / n},
                 {"calls_per_step", p.forward_calls / n}};
  }
  std::printf("  %-20s %8s %8s %8.2f %6.1f%%\n", "clip + AdamW", "", "", optim_s * 1e3 / n,
              100 * optim_s * 1e3 / n / step_ms);
  std::fflush(stdout);
  out["clip_adamw"] = {{"ms_per_step", optim_s * 1e3 / n}};
  out["step_ms"] = step_ms;
  return out;
}

json bench_train(const ModelConfig& cfg, std::size_t B, std::size_t T, const Options& o) {
  Decoder model(cfg, 0);
  const auto named = model.named_parameters();
  AdamW optimizer(named);
  const std::vector<Tensor> params = model.parameters();
  std::mt19937_64 rng(0);
  std::uniform_int_distribution<int> pick(0, static_cast<int>(cfg.vocab_size) - 1);
  std::vector<std::pair<Ids, Ids>> batches;
  for (int i = 0; i < 8; ++i) {
    Ids x = Ids::from_shape({B, T}), y = Ids::from_shape({B, T});
    for (auto& id : x) id = pick(rng);
    for (auto& id : y) id = pick(rng);
    batches.emplace_back(std::move(x), std::move(y));
  }
  std::vector<double> total, forward_backward, optim;
  double rss_after_warmup = 0, loss_value = 0;
  DataParallel parallel(model, num_threads());
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    if (s == o.warmup) rss_after_warmup = rss_mb();
    const auto& [x, y] = batches[static_cast<std::size_t>(s) % batches.size()];
    const auto t0 = Clock::now();
    loss_value = parallel.loss_and_grad(x, y);  // zero_grad, forward, cross-entropy, backward
    const double t1 = seconds_since(t0);
    clip_grad_norm(params, 1.0);
    optimizer.step(1e-3);
    const double t2 = seconds_since(t0);
    if (s >= o.warmup) {
      total.push_back(t2);
      forward_backward.push_back(t1);
      optim.push_back(t2 - t1);
    }
  }
  const double rss_end = rss_mb();
  json st = stats(total);
  const double median = st["median"];
  const double flops = flops_per_step(cfg, static_cast<double>(B), static_cast<double>(T));
  std::printf(
      "[%zux%zu] step median %.2f ms (min %.2f, max %.2f); fwd+bwd %.2f clip+opt %.2f; "
      "%.0f tok/s; %.1f GFLOP/s; RSS %.1f -> %.1f MB, peak %.1f MB\n",
      B, T, median * 1e3, double(st["min"]) * 1e3, double(st["max"]) * 1e3,
      double(stats(forward_backward)["median"]) * 1e3, double(stats(optim)["median"]) * 1e3,
      double(B * T) / median, flops / median / 1e9, rss_after_warmup, rss_end, peak_rss_mb());
  std::fflush(stdout);
  const json profile =
      o.profile > 0 ? profile_steps(model, optimizer, params, batches, o.profile) : json();
  return {{"B", B},
          {"T", T},
          {"step_s", st},
          {"forward_backward_s", stats(forward_backward)},
          {"clip_opt_s", stats(optim)},
          {"flops", flops},
          {"tokens_per_s_median", double(B * T) / median},
          {"gflops_per_s_median", flops / median / 1e9},
          {"final_loss", loss_value},
          {"rss_mb_after_warmup", rss_after_warmup},
          {"rss_mb_end", rss_end},
          {"rss_growth_mb", rss_end - rss_after_warmup},
          {"peak_rss_mb", peak_rss_mb()},
          {"profile", profile}};
}

json bench_generate(const ModelConfig& cfg, const Options& o) {
  Decoder model(cfg, 0);
  json result = {{"new_tokens", o.gen_tokens}};
  std::vector<std::vector<std::int32_t>> outs;
  for (bool use_cache : {true, false}) {
    if (!use_cache && o.cache_only) break;
    SamplingOptions sampling;
    sampling.temperature = 0;  // greedy, as bench.py
    sampling.use_kv_cache = use_cache;
    std::vector<double> times;
    std::vector<std::int32_t> out;
    for (int r = 0; r <= o.gen_reps; ++r) {
      std::mt19937_64 rng(0);
      const auto t0 = Clock::now();
      out = generate(model, {0}, static_cast<std::size_t>(o.gen_tokens), cfg.context_length,
                     sampling, rng);
      const double dt = seconds_since(t0);
      if (r > 0) times.push_back(dt);
    }
    outs.push_back(out);
    json st = stats(times);
    const double median = st["median"];
    const std::string key = use_cache ? "kv_cache" : "no_cache";
    result[key] = {{"total_s", st},
                   {"ms_per_token_median", median / o.gen_tokens * 1e3},
                   {"tokens_per_s_median", o.gen_tokens / median}};
    std::printf("[gen %s] %d tokens: median %.1f ms (min %.1f, max %.1f) = %.0f tok/s\n",
                key.c_str(), o.gen_tokens, median * 1e3, double(st["min"]) * 1e3,
                double(st["max"]) * 1e3, o.gen_tokens / median);
    std::fflush(stdout);
  }
  if (outs.size() == 2) result["same_tokens"] = outs[0] == outs[1];
  return result;
}

/// Long generation past the window: o.long_tokens tokens with a window of o.long_window, in
/// the rolling mode (the default of `glass sample`), and optionally o.exact_tokens in the exact
/// mode, once.
json bench_long_generate(const ModelConfig& cfg, const Options& o) {
  Decoder model(cfg, 0);
  const std::size_t window =
      std::min<std::size_t>(static_cast<std::size_t>(o.long_window), cfg.context_length);
  json result = {{"new_tokens", o.long_tokens}, {"window", window}};
  auto time_mode = [&](WindowMode mode, int tokens, int reps) {
    SamplingOptions sampling;
    sampling.temperature = 0;
    sampling.window_mode = mode;
    std::vector<double> times;
    for (int r = 0; r <= reps; ++r) {
      std::mt19937_64 rng(0);
      const auto t0 = Clock::now();
      generate(model, {0}, static_cast<std::size_t>(tokens), window, sampling, rng);
      if (r > 0 || reps == 0) times.push_back(seconds_since(t0));
    }
    json st = stats(times);
    const double median = st["median"];
    std::printf(
        "[gen %s, window %zu] %d tokens: median %.1f ms (min %.1f, max %.1f) = %.0f tok/s\n",
        to_string(mode), window, tokens, median * 1e3, double(st["min"]) * 1e3,
        double(st["max"]) * 1e3, tokens / median);
    std::fflush(stdout);
    return json{{"new_tokens", tokens}, {"total_s", st}, {"tokens_per_s_median", tokens / median}};
  };
  if (o.long_tokens > 0)
    result["rolling"] = time_mode(WindowMode::rolling, o.long_tokens, o.long_reps);
  if (o.exact_tokens > 0) result["exact"] = time_mode(WindowMode::exact, o.exact_tokens, 0);
  return result;
}

/// GFLOP/s of cblas_sgemm on two n x n matrices at the current OpenBLAS thread count, best of 5
/// after one warm-up: the machine's practical limit for the step's matrix products.
double sgemm_gflops(int n) {
  std::vector<float> a(static_cast<std::size_t>(n) * n), b(a.size()), c(a.size());
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> u(-1, 1);
  for (float& x : a) x = u(rng);
  for (float& x : b) x = u(rng);
  double best = 0;
  for (int r = 0; r < 6; ++r) {
    const auto t0 = Clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n,
                0.0f, c.data(), n);
    const double dt = seconds_since(t0);
    if (r > 0) best = std::max(best, 2.0 * n * n * n / dt / 1e9);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  tune_malloc_for_training();                            // as the glass program does
  set_num_threads(static_cast<std::size_t>(o.threads));  // as glass train --threads
  ModelConfig cfg;                                       // the default model, vocab 65 as bench.py
  cfg.vocab_size = 65;
  cfg.ops_path = parse_ops_path(o.attention);
  cfg.validate();
  const std::string blas = glass::blas_core::description();  // every table names the BLAS core
  json res = {{"program", "glass"},
              {"blas", blas},
              {"threads", o.threads},
              {"attention", o.attention},
              {"openblas_get_num_threads", openblas_get_num_threads()},
              {"params", Decoder(cfg, 0).num_parameters()}};
  std::printf("[blas] %s\n", blas.c_str());
  double peak = 0;
  if (o.sgemm_n > 0) {
    peak = sgemm_gflops(o.sgemm_n);
    res["sgemm"] = {{"n", o.sgemm_n}, {"gflops", peak}};
    std::printf("[sgemm n=%d, %d thread(s), %s] %.1f GFLOP/s (best of 5)\n", o.sgemm_n, o.threads,
                blas.c_str(), peak);
    std::fflush(stdout);
  }
  if (!o.no_train) {
    res["train"] = json::object();
    std::stringstream shapes(o.shapes);
    std::string shape;
    while (std::getline(shapes, shape, ',')) {
      std::size_t B = 0, T = 0;
      if (std::sscanf(shape.c_str(), "%zux%zu", &B, &T) != 2 || B == 0 || T == 0 ||
          T > cfg.context_length) {
        std::cerr << "bench_train_step: bad shape '" << shape
                  << "' (want BxT, T <= " << cfg.context_length << ")\n";
        return 2;
      }
      json r = bench_train(cfg, B, T, o);
      if (peak > 0) {  // the step against the sgemm limit: 1.0 = every FLOP at sgemm speed
        const double limit_s = double(r["flops"]) / (peak * 1e9);
        r["limit_s"] = limit_s;
        r["times_limit"] = double(r["step_s"]["median"]) / limit_s;
        std::printf("[%s] %.2fx the sgemm limit (%.2f ms at %.1f GFLOP/s)\n", shape.c_str(),
                    double(r["times_limit"]), limit_s * 1e3, peak);
        std::fflush(stdout);
      }
      res["train"][shape] = r;
    }
  }
  if (!o.no_gen) res["generate"] = bench_generate(cfg, o);
  if (!o.no_gen && (o.long_tokens > 0 || o.exact_tokens > 0))
    res["long_generate"] = bench_long_generate(cfg, o);
  res["peak_rss_mb"] = peak_rss_mb();
  std::cout << "RESULT " << res.dump() << std::endl;
  return 0;
}
