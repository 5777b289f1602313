// Kernel benchmarks (Google Benchmark): the autograd ops at the default model's shapes, with
// GFLOP/s counters, next to raw cblas_sgemm on the same shapes (the ceiling: how much the op
// wrapper costs on top of OpenBLAS), the row kernels (softmax, RMSNorm, cross-entropy), and the
// fused ops next to the compositions they replace (silu_mul vs silu(gate) * up,
// causal_attention vs the reference attention steps).
//
// Shapes (the default model, batch of 3 sequences of 256 tokens = 768 rows):
//   linear 768x128 -> 344 (SwiGLU up/gate), 768x128 -> 128 (attention projections),
//   attention scores: 12 (= 3 batch x 4 heads) ... here 48 = 12*4 products of (64, 32) x (32, 64).
//   silu_mul (12*64, 344) = the 12x64 training step's SwiGLU gate; causal attention at B=12,T=64
//   and B=8,T=256 = those steps' attention.
// Run: build/bench/bench_kernels [--benchmark_filter=Linear]

#include <benchmark/benchmark.h>

#include <cblas.h>

#include <cmath>
#include <limits>

#include "autograd/blas_core.hpp"
#include "autograd/kernels/kernels.hpp"
#include "autograd/ops.hpp"
#include "autograd/tape.hpp"

namespace {

using namespace glass;

void set_gflops(benchmark::State& state, double flops_per_iteration) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops_per_iteration * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// ---- matrix products -------------------------------------------------------------------------

// y = x W^T, x (rows, in), W (out, in), forward only.
void BM_Linear(benchmark::State& state) {
  const std::size_t rows = state.range(0), in = state.range(1), out = state.range(2);
  Rng rng(1);
  const Tensor x = Tensor::randn({rows, in}, 1, rng), w = Tensor::randn({out, in}, 0.1f, rng);
  NoGradGuard no_grad;
  for (auto _ : state) benchmark::DoNotOptimize(linear(x, w).value().data());
  set_gflops(state, 2.0 * rows * in * out);
}

// Forward and backward (dx and dW): three gemms of the same size.
void BM_LinearForwardBackward(benchmark::State& state) {
  const std::size_t rows = state.range(0), in = state.range(1), out = state.range(2);
  Rng rng(1);
  const Tensor x = Tensor::randn({rows, in}, 1, rng, true),
               w = Tensor::randn({out, in}, 0.1f, rng, true);
  for (auto _ : state) {
    sum(linear(x, w)).backward();
    benchmark::DoNotOptimize(w.grad().data());
  }
  set_gflops(state, 3 * 2.0 * rows * in * out);
}

// The same product as BM_Linear straight through OpenBLAS: C = A B^T.
void BM_RawSgemmNT(benchmark::State& state) {
  const int rows = state.range(0), in = state.range(1), out = state.range(2);
  std::vector<float> a(rows * in, 0.5f), b(out * in, 0.25f), c(rows * out);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, out, in, 1.0f, a.data(), in,
                b.data(), in, 0.0f, c.data(), out);
    benchmark::DoNotOptimize(c.data());
  }
  set_gflops(state, 2.0 * rows * in * out);
}

// Attention scores Q K^T: batch x (n, d) @ (n, d)^T -> batch x (n, n).
void BM_AttentionScores(benchmark::State& state) {
  const std::size_t batch = state.range(0), n = state.range(1), d = state.range(2);
  Rng rng(2);
  const Tensor q = Tensor::randn({batch, n, d}, 1, rng), k = Tensor::randn({batch, n, d}, 1, rng);
  NoGradGuard no_grad;
  for (auto _ : state) benchmark::DoNotOptimize(matmul_nt(q, k).value().data());
  set_gflops(state, 2.0 * batch * n * n * d);
}

// Attention mix weights @ V: batch x (n, n) @ (n, d).
void BM_AttentionMix(benchmark::State& state) {
  const std::size_t batch = state.range(0), n = state.range(1), d = state.range(2);
  Rng rng(3);
  const Tensor p = Tensor::randn({batch, n, n}, 1, rng), v = Tensor::randn({batch, n, d}, 1, rng);
  NoGradGuard no_grad;
  for (auto _ : state) benchmark::DoNotOptimize(matmul(p, v).value().data());
  set_gflops(state, 2.0 * batch * n * n * d);
}

// The scores product as a loop of raw cblas_sgemm calls.
void BM_RawSgemmBatchedNT(benchmark::State& state) {
  const int batch = state.range(0), n = state.range(1), d = state.range(2);
  std::vector<float> q(batch * n * d, 0.5f), k(batch * n * d, 0.25f), s(batch * n * n);
  for (auto _ : state) {
    for (int i = 0; i < batch; ++i)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, d, 1.0f, q.data() + i * n * d, d,
                  k.data() + i * n * d, d, 0.0f, s.data() + i * n * n, n);
    benchmark::DoNotOptimize(s.data());
  }
  set_gflops(state, 2.0 * batch * n * n * d);
}

/// The reference attention steps 4-8: q (B, T, H, D), k and v (B, T, H_kv, D) -> (B, T, H, D).
Tensor reference_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Mask& mask,
                           Scalar scale) {
  const std::size_t n_rep = q.shape()[2] / k.shape()[2];
  const Tensor K = repeat_kv(transpose(k, 1, 2), n_rep), V = repeat_kv(transpose(v, 1, 2), n_rep);
  const Tensor scores = matmul_nt(transpose(q, 1, 2), K, scale);
  const Tensor weights =
      softmax(masked_fill(scores, mask, -std::numeric_limits<Scalar>::infinity()));
  return transpose(matmul(weights, V), 1, 2);
}

// Attention steps 5-8 of the training step, forward + backward: causal_attention (fused, no
// (B, H, T, T) tensors) against the reference steps it replaces (nn/attention.cpp): heads first,
// repeat_kv, matmul_nt, masked_fill(causal, -inf), softmax, matmul, heads back. Args: B, T,
// fused; 4 heads, 2 KV heads, head_dim 32.
void BM_CausalAttentionForwardBackward(benchmark::State& state) {
  const std::size_t B = state.range(0), T = state.range(1), H = 4, H_kv = 2, D = 32;
  const bool fused = state.range(2) != 0;
  Rng rng(9);
  const Array qa = Tensor::randn({B, T, H, D}, 1, rng).value();
  const Array ka = Tensor::randn({B, T, H_kv, D}, 1, rng).value();
  const Array va = Tensor::randn({B, T, H_kv, D}, 1, rng).value();
  const Tensor R = Tensor::randn({B, T, H, D}, 1, rng);
  const Mask mask = causal_mask(T, T);
  const Scalar scale = 1 / std::sqrt(static_cast<Scalar>(D));
  for (auto _ : state) {
    // Fresh leaves without a gradient, as q, k, v are in a training step (intermediates).
    const Tensor q(qa, true), k(ka, true), v(va, true);
    const Tensor out =
        fused ? causal_attention(q, k, v, scale) : reference_attention(q, k, v, mask, scale);
    sum(out * R).backward();
    tape().clear();
    benchmark::DoNotOptimize(q.grad().data());
  }
  state.SetLabel(fused ? "causal_attention" : "the reference attention steps");
}

// ---- row kernels -------------------------------------------------------------------------------

void set_rows(benchmark::State& state, std::size_t rows) {
  state.counters["rows/s"] =
      benchmark::Counter(static_cast<double>(rows), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Softmax(benchmark::State& state) {
  const std::size_t rows = state.range(0), d = state.range(1);
  Rng rng(4);
  const Tensor x = Tensor::randn({rows, d}, 1, rng);
  NoGradGuard no_grad;
  for (auto _ : state) benchmark::DoNotOptimize(softmax(x).value().data());
  set_rows(state, rows);
}

void BM_SoftmaxForwardBackward(benchmark::State& state) {
  const std::size_t rows = state.range(0), d = state.range(1);
  Rng rng(4);
  const Tensor x = Tensor::randn({rows, d}, 1, rng, true), w = Tensor::randn({rows, d}, 1, rng);
  for (auto _ : state) {
    sum(softmax(x) * w).backward();
    benchmark::DoNotOptimize(x.grad().data());
  }
  set_rows(state, rows);
}

// ---- fused ops vs their compositions ------------------------------------------------------------
// Forward + backward of the op alone: sum(y).backward() seeds y's gradient with ones (the same
// small extra cost for the fused op and for its composition).

// SwiGLU's gate at the model's shape: rows = 12*64 tokens, d = ffn_hidden = 344.
void BM_SiluMulForwardBackward(benchmark::State& state) {
  const std::size_t rows = state.range(0), d = state.range(1);
  Rng rng(7);
  const Tensor gate = Tensor::randn({rows, d}, 1, rng, true),
               up = Tensor::randn({rows, d}, 1, rng, true);
  for (auto _ : state) {
    sum(silu_mul(gate, up)).backward();
    benchmark::DoNotOptimize(gate.grad().data());
  }
  set_rows(state, rows);
}

// The composition silu_mul replaces: silu(gate) * up (three passes forward, an intermediate array).
void BM_SiluTimesUpForwardBackward(benchmark::State& state) {
  const std::size_t rows = state.range(0), d = state.range(1);
  Rng rng(7);
  const Tensor gate = Tensor::randn({rows, d}, 1, rng, true),
               up = Tensor::randn({rows, d}, 1, rng, true);
  for (auto _ : state) {
    sum(silu(gate) * up).backward();
    benchmark::DoNotOptimize(gate.grad().data());
  }
  set_rows(state, rows);
}

void BM_RMSNormForwardBackward(benchmark::State& state) {
  const std::size_t rows = state.range(0), d = state.range(1);
  Rng rng(5);
  const Tensor x = Tensor::randn({rows, d}, 1, rng, true), g = Tensor::ones({d}, true);
  for (auto _ : state) {
    sum(rms_norm(x, g, 1e-5f)).backward();
    benchmark::DoNotOptimize(x.grad().data());
  }
  set_rows(state, rows);
}

void BM_CrossEntropyForwardBackward(benchmark::State& state) {
  const std::size_t rows = state.range(0), vocab = state.range(1);
  Rng rng(6);
  const Tensor logits = Tensor::randn({rows, vocab}, 1, rng, true);
  Ids targets = Ids::from_shape({rows});
  for (std::size_t i = 0; i < rows; ++i) targets(i) = static_cast<std::int32_t>(i % vocab);
  for (auto _ : state) {
    cross_entropy(logits, targets).backward();
    benchmark::DoNotOptimize(logits.grad().data());
  }
  set_rows(state, rows);
}

}  // namespace

BENCHMARK(BM_Linear)
    ->Args({768, 128, 344})
    ->Args({768, 128, 128})
    ->Args({768, 344, 128})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RawSgemmNT)
    ->Args({768, 128, 344})
    ->Args({768, 128, 128})
    ->Args({768, 344, 128})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LinearForwardBackward)
    ->Args({768, 128, 344})
    ->Args({768, 128, 128})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AttentionScores)
    ->Args({48, 64, 32})
    ->Args({12, 256, 32})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RawSgemmBatchedNT)
    ->Args({48, 64, 32})
    ->Args({12, 256, 32})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AttentionMix)->Args({48, 64, 32})->Args({12, 256, 32})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CausalAttentionForwardBackward)
    ->Args({12, 64, 1})
    ->Args({12, 64, 0})
    ->Args({8, 256, 1})
    ->Args({8, 256, 0})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Softmax)->Args({48 * 64, 64})->Args({12 * 256, 256})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SoftmaxForwardBackward)->Args({48 * 64, 64})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SiluMulForwardBackward)->Args({12 * 64, 344})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SiluTimesUpForwardBackward)->Args({12 * 64, 344})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RMSNormForwardBackward)->Args({768, 128})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CrossEntropyForwardBackward)
    ->Args({768, 65})
    ->Args({768, 1024})
    ->Unit(benchmark::kMicrosecond);

// The table's header names the BLAS core the products ran on ("blas: OpenBLAS 0.3.21, core ...").
const bool kBlasInContext =
    (benchmark::AddCustomContext("blas", glass::blas_core::description()), true);

BENCHMARK_MAIN();
