// bench_small_gemm: the training step's weight products at their exact shapes, one thread,
// OpenBLAS cblas_sgemm against libxsmm's JIT kernels (when the build found libxsmm) and a
// plain AVX2 + FMA small-GEMM written here (a 6 x 16 register block over the inner dimension,
// in chunks of 384, the right operand packed into 16-column panels, the output written once
// from registers: no zeroing pass). Each variant's result is checked against cblas_sgemm's.
//
// The products are those of `linear` in a B x T step of the default model (bench_train_step):
// rows = B*T, and for each of the 29 weights W (out, in) — per layer wq (128,128), wk and wv
// (n_kv_heads*head_dim = 64, 128), wo (128,128), w1 and w3 (344,128), w2 (128,344), and the
// LM head (vocab 65, 128) —
//   forward  Y (rows, out) = X (rows, in) W^T
//   dX       dX (rows, in) = dY (rows, out) W
//   dW       dW (out, in)  = dY^T X
// Two timings per variant, median of --reps repetitions:
//   hot   each product alone, repeated on the same buffers (operands in the cache);
//   step  the 87 products in the step's order (29 forward, then dX and dW from the last layer
//         back), each on its own operands and its own output (~110 MB in all, so no operand
//         is in the cache when its product starts; outputs allocated once, no page faults).
// Usage: bench_small_gemm [--rows 768] [--reps 15]

#include <cblas.h>
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "autograd/blas_core.hpp"

#ifdef GLASS_HAVE_LIBXSMM
#include <libxsmm.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

// ---- the plain AVX2 small-GEMM ------------------------------------------------------------
// Row-major C (M, N) = A (M, K) B (K, N) (+ C when accumulate). A = X (forward) or dY (dX) is
// read in place; A = dY^T (dW) is packed 6 rows at a time (pack_a_transposed), as reading it in
// place (one cache line per inner index) measured 1.2-1.7x slower. B comes packed: panel j holds
// columns 16j .. 16j+15 as K rows of 16 floats (zeros past N), see pack_*.

constexpr int kMr = 6, kNr = 16;

float* pack_buffer(std::size_t floats) {
  thread_local std::vector<float> buf;
  if (buf.size() < floats + 8) buf.resize(floats + 8);
  return buf.data();
}

// Packs B (K, N) stored row-major with row stride ldb (B[p][c] = b[p * ldb + c]).
void pack_rows(const float* b, int K, int N, int ldb, float* out) {
  for (int j = 0; j < N; j += kNr) {
    const int w = std::min(kNr, N - j);
    for (int p = 0; p < K; ++p, out += kNr) {
      const float* src = b + static_cast<std::size_t>(p) * ldb + j;
      if (w == kNr) {
        _mm256_storeu_ps(out, _mm256_loadu_ps(src));
        _mm256_storeu_ps(out + 8, _mm256_loadu_ps(src + 8));
      } else {
        std::memcpy(out, src, sizeof(float) * w);
        std::fill(out + w, out + kNr, 0.0f);
      }
    }
  }
}

// Packs B = W^T (K = in, N = out) from W (out, in) row-major: B[p][c] = w[c * K + p].
void pack_transposed(const float* w, int K, int N, float* out) {
  for (int j = 0; j < N; j += kNr) {
    const int width = std::min(kNr, N - j);
    for (int p = 0; p < K; ++p, out += kNr) {
      for (int c = 0; c < width; ++c) out[c] = w[static_cast<std::size_t>(j + c) * K + p];
      for (int c = width; c < kNr; ++c) out[c] = 0.0f;
    }
  }
}

// One block of up to 6 rows x 16 columns over the whole K, kept in 12 ymm registers.
template <int Rows>
void micro_kernel(int K, const float* a, std::ptrdiff_t a_row, std::ptrdiff_t a_col,
                  const float* bp, float* c, int ldc, int width, bool accumulate) {
  // Every loop over r is unrolled, so acc lives in registers (an indexed array would be kept
  // in memory by the compiler).
  __m256 acc[Rows][2];
#pragma GCC unroll 8
  for (int r = 0; r < Rows; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int p = 0; p < K; ++p, bp += kNr) {
    const __m256 b0 = _mm256_loadu_ps(bp), b1 = _mm256_loadu_ps(bp + 8);
    const float* ap = a + p * a_col;
#pragma GCC unroll 8
    for (int r = 0; r < Rows; ++r) {
      const __m256 x = _mm256_broadcast_ss(ap + r * a_row);
      acc[r][0] = _mm256_fmadd_ps(x, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(x, b1, acc[r][1]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < Rows; ++r) {
    float* cr = c + static_cast<std::size_t>(r) * ldc;
    if (width == kNr) {
      if (accumulate) {
        acc[r][0] = _mm256_add_ps(acc[r][0], _mm256_loadu_ps(cr));
        acc[r][1] = _mm256_add_ps(acc[r][1], _mm256_loadu_ps(cr + 8));
      }
      _mm256_storeu_ps(cr, acc[r][0]);
      _mm256_storeu_ps(cr + 8, acc[r][1]);
    } else {
      alignas(32) float tmp[kNr];
      _mm256_store_ps(tmp, acc[r][0]);
      _mm256_store_ps(tmp + 8, acc[r][1]);
      for (int q = 0; q < width; ++q) cr[q] = accumulate ? cr[q] + tmp[q] : tmp[q];
    }
  }
}

using MicroKernel = void (*)(int, const float*, std::ptrdiff_t, std::ptrdiff_t, const float*,
                             float*, int, int, bool);
constexpr MicroKernel kKernels[kMr + 1] = {nullptr,         micro_kernel<1>, micro_kernel<2>,
                                           micro_kernel<3>, micro_kernel<4>, micro_kernel<5>,
                                           micro_kernel<6>};

// Where the 6-row blocks of A are: block b (rows 6b .. 6b+5) starts at base + b * block, its
// element (r, p) at r * row + p * col. A in place: block = 6 * row; packed: row 1, col 6.
struct ASource {
  const float* base;
  std::ptrdiff_t row, col, block;
};

// Packs A = dY^T (M = out, K = rows) from dY (rows, out): block b holds, for each p, the 6
// floats dY[p][6b .. 6b+5] side by side (zeros past M), so the kernel's broadcasts read
// consecutive memory.
ASource pack_a_transposed(const float* dy, int K, int M, float* out) {
  const std::ptrdiff_t block = static_cast<std::ptrdiff_t>(K) * kMr;
  constexpr int kRowsAtOnce = 32;  // 32 rows of dY (<= 44 KB) stay in L1/L2 while copied out
  for (int p0 = 0; p0 < K; p0 += kRowsAtOnce) {
    const int p1 = std::min(K, p0 + kRowsAtOnce);
    for (int i = 0; i < M; i += kMr) {
      float* dst = out + (i / kMr) * block + static_cast<std::ptrdiff_t>(p0) * kMr;
      if (i + kMr <= M) {
        for (int p = p0; p < p1; ++p, dst += kMr)
          for (int r = 0; r < kMr; ++r) dst[r] = dy[static_cast<std::size_t>(p) * M + i + r];
      } else {  // the last rows, padded with zeros
        for (int p = p0; p < p1; ++p, dst += kMr)
          for (int r = 0; r < kMr; ++r)
            dst[r] = i + r < M ? dy[static_cast<std::size_t>(p) * M + i + r] : 0.0f;
      }
    }
  }
  return ASource{out, 1, kMr, block};
}

// C (M, N) (+)= A (M, K) Bpacked. The inner dimension is cut into chunks of kKc (the later
// chunks add to C); per chunk, for each 16-column panel of B (kKc x 16 floats, 24 KB: in L1) every
// 6-row block of A passes.
constexpr int kKc = 384;

void small_gemm(int M, int N, int K, ASource a, const float* bp, float* c, int ldc,
                bool accumulate) {
  for (int k0 = 0; k0 < K; k0 += kKc) {
    const int kc = std::min(kKc, K - k0);
    for (int j = 0; j < N; j += kNr) {
      const float* panel =
          bp + static_cast<std::size_t>(j) * K + static_cast<std::size_t>(k0) * kNr;
      for (int i = 0; i < M; i += kMr) {
        const float* ai = a.base + (i / kMr) * a.block + k0 * a.col;
        kKernels[std::min(kMr, M - i)](kc, ai, a.row, a.col, panel,
                                       c + static_cast<std::size_t>(i) * ldc + j, ldc,
                                       std::min(kNr, N - j), accumulate || k0 > 0);
      }
    }
  }
}

// A (M, K) read in place, row-major with row stride `row`.
ASource in_place(const float* a, std::ptrdiff_t row) { return ASource{a, row, 1, kMr * row}; }

// ---- the three products, one function per variant -------------------------------------------
struct Product {
  enum Kind { kForward, kGradX, kGradW } kind;
  int rows, out, in;  // X (rows, in), W (out, in), Y (rows, out)
  const char* name;
  // operands
  std::vector<float> x, w, dy;
};

int out_rows(const Product& p) { return p.kind == Product::kGradW ? p.out : p.rows; }
int out_cols(const Product& p) {
  return p.kind == Product::kForward ? p.out : p.in;  // Y (rows, out), dX (rows, in), dW (out, in)
}
double flops(const Product& p) { return 2.0 * p.rows * p.out * p.in; }

void run_openblas(const Product& p, float* c) {
  const int R = p.rows, O = p.out, I = p.in;
  switch (p.kind) {
    case Product::kForward:
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, R, O, I, 1.0f, p.x.data(), I, p.w.data(),
                  I, 0.0f, c, O);
      break;
    case Product::kGradX:
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, R, I, O, 1.0f, p.dy.data(), O,
                  p.w.data(), I, 0.0f, c, I);
      break;
    case Product::kGradW:
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, O, I, R, 1.0f, p.dy.data(), O,
                  p.x.data(), I, 0.0f, c, I);
      break;
  }
}

void run_own(const Product& p, float* c) {
  const int R = p.rows, O = p.out, I = p.in;
  switch (p.kind) {
    case Product::kForward: {  // Y = X W^T: B = W^T (I, O), packed from W
      float* bp = pack_buffer(static_cast<std::size_t>(I) * ((O + kNr - 1) / kNr * kNr));
      pack_transposed(p.w.data(), I, O, bp);
      small_gemm(R, O, I, in_place(p.x.data(), I), bp, c, O, false);
      break;
    }
    case Product::kGradX: {  // dX = dY W: B = W (O, I)
      float* bp = pack_buffer(static_cast<std::size_t>(O) * ((I + kNr - 1) / kNr * kNr));
      pack_rows(p.w.data(), O, I, I, bp);
      small_gemm(R, I, O, in_place(p.dy.data(), O), bp, c, I, false);
      break;
    }
    case Product::kGradW: {  // dW = dY^T X: A = dY^T packed, B = X (R, I)
      const std::size_t b_size = static_cast<std::size_t>(R) * ((I + kNr - 1) / kNr * kNr);
      float* bp = pack_buffer(b_size + static_cast<std::size_t>(R) * ((O + kMr - 1) / kMr * kMr));
      pack_rows(p.x.data(), R, I, I, bp);
      const ASource a = pack_a_transposed(p.dy.data(), R, O, bp + b_size);
      small_gemm(O, I, R, a, bp, c, I, false);
      break;
    }
  }
}

#ifdef GLASS_HAVE_LIBXSMM
// libxsmm is column-major: row-major C (M, N) = A (M, K) B (K, N) is column-major
// C^T = B^T A^T, i.e. a kernel (m = N, n = M, k = K) called as (B, A, C). Its JIT kernels are
// NN only here, so the transposed operands (W^T of the forward pass, dY^T of dW) are copied
// transposed first. The rows are split into blocks of kXsmmRows, one dispatched kernel each.
constexpr int kXsmmRows = 64;

libxsmm_smmfunction xsmm_kernel(int m, int n, int k, int lda, int ldb, int ldc) {
  const float alpha = 1, beta = 0;
  const int flags = LIBXSMM_GEMM_FLAG_NONE, prefetch = LIBXSMM_PREFETCH_NONE;
  const libxsmm_blasint la = lda, lb = ldb, lc = ldc;
  return libxsmm_smmdispatch(m, n, k, &la, &lb, &lc, &alpha, &beta, &flags, &prefetch);
}

// row-major C (M, N) = A (M, K) B (K, N), all NN, through blocks of rows.
bool xsmm_nn(int M, int N, int K, const float* a, int lda, const float* b, int ldb, float* c,
             int ldc) {
  for (int i = 0; i < M; i += kXsmmRows) {
    const int rows = std::min(kXsmmRows, M - i);
    const libxsmm_smmfunction f = xsmm_kernel(N, rows, K, ldb, lda, ldc);
    if (!f) return false;
    f(b, a + static_cast<std::size_t>(i) * lda, c + static_cast<std::size_t>(i) * ldc);
  }
  return true;
}

// dst (cols, rows) = src (rows, cols)^T, both row-major, with libxsmm's own transposition.
void transpose(const float* src, int rows, int cols, float* dst) {
  libxsmm_otrans(dst, src, sizeof(float), cols, rows, cols, rows);
}

bool xsmm_ok = true;

void run_libxsmm(const Product& p, float* c) {
  const int R = p.rows, O = p.out, I = p.in;
  switch (p.kind) {
    case Product::kForward: {
      float* wt = pack_buffer(static_cast<std::size_t>(I) * O);
      transpose(p.w.data(), O, I, wt);  // (I, O)
      xsmm_ok &= xsmm_nn(R, O, I, p.x.data(), I, wt, O, c, O);
      break;
    }
    case Product::kGradX:
      xsmm_ok &= xsmm_nn(R, I, O, p.dy.data(), O, p.w.data(), I, c, I);
      break;
    case Product::kGradW: {
      float* dyt = pack_buffer(static_cast<std::size_t>(R) * O);
      transpose(p.dy.data(), R, O, dyt);  // (O, R)
      xsmm_ok &= xsmm_nn(O, I, R, dyt, R, p.x.data(), I, c, I);
      break;
    }
  }
}
#endif

struct Variant {
  const char* name;
  std::function<void(const Product&, float*)> run;
};

// The step's products, forward in layer order, then the backward in reverse.
std::vector<Product> step_products(int rows, std::mt19937& rng) {
  struct Weight {
    const char* name;
    int out, in;
  };
  std::vector<Weight> weights;
  for (int layer = 0; layer < 4; ++layer) {
    weights.push_back({"wq", 128, 128});
    weights.push_back({"wk", 64, 128});
    weights.push_back({"wv", 64, 128});
    weights.push_back({"wo", 128, 128});
    weights.push_back({"w1", 344, 128});
    weights.push_back({"w3", 344, 128});
    weights.push_back({"w2", 128, 344});
  }
  weights.push_back({"head", 65, 128});
  std::normal_distribution<float> n01(0.0f, 1.0f);
  auto fill = [&](std::size_t n) {
    std::vector<float> v(n);
    for (float& e : v) e = n01(rng);
    return v;
  };
  std::vector<Product> out;
  for (const Weight& w : weights) {
    Product p{Product::kForward, rows, w.out, w.in, w.name, {}, {}, {}};
    p.x = fill(static_cast<std::size_t>(rows) * w.in);
    p.w = fill(static_cast<std::size_t>(w.out) * w.in);
    out.push_back(std::move(p));
  }
  for (std::size_t i = weights.size(); i-- > 0;) {
    for (Product::Kind kind : {Product::kGradX, Product::kGradW}) {
      Product p{kind, rows, weights[i].out, weights[i].in, weights[i].name, {}, {}, {}};
      p.x = fill(static_cast<std::size_t>(rows) * weights[i].in);
      p.w = fill(static_cast<std::size_t>(weights[i].out) * weights[i].in);
      p.dy = fill(static_cast<std::size_t>(rows) * weights[i].out);
      out.push_back(std::move(p));
    }
  }
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

const char* kind_name(Product::Kind k) {
  return k == Product::kForward ? "forward X W^T"
         : k == Product::kGradX ? "dX = dY W"
                                : "dW = dY^T X";
}

}  // namespace

int main(int argc, char** argv) {
  int rows = 768, reps = 15;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--rows")
      rows = std::atoi(argv[i + 1]);
    else if (a == "--reps")
      reps = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "bench_small_gemm: unknown option %s (--rows N --reps N)\n", a.c_str());
      return 2;
    }
  }
  if (argc % 2 == 0 || rows < 1 || reps < 1) {
    std::fprintf(stderr, "usage: bench_small_gemm [--rows N>0] [--reps N>0]\n");
    return 2;
  }
  openblas_set_num_threads(1);
#ifdef GLASS_HAVE_LIBXSMM
  libxsmm_init();
#endif
  std::vector<Variant> variants = {{"openblas", run_openblas}, {"own_avx2", run_own}};
#ifdef GLASS_HAVE_LIBXSMM
  variants.push_back({"libxsmm", run_libxsmm});
#endif

  std::mt19937 rng(7);
  const std::vector<Product> step = step_products(rows, rng);

  // The machine's limit: a 2048 x 2048 sgemm, best of 5.
  {
    const int n = 2048;
    std::vector<float> a(static_cast<std::size_t>(n) * n, 1.0f), b(a), c(a);
    double best = 1e30;
    for (int r = 0; r < 5; ++r) {
      const auto t0 = Clock::now();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(),
                  n, 0.0f, c.data(), n);
      best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
    }
    std::printf("sgemm n=2048, 1 thread, %s: %.1f GFLOP/s\n",
                glass::blas_core::description().c_str(), 2.0 * n * n * n / best * 1e-9);
  }

  // Correctness: every variant against OpenBLAS on every distinct product.
  bool all_ok = true;
  for (const Variant& v : variants) {
    double worst = 0;
    for (const Product& p : step) {
      const std::size_t n = static_cast<std::size_t>(out_rows(p)) * out_cols(p);
      std::vector<float> ref(n), got(n, std::nanf(""));
      run_openblas(p, ref.data());
      v.run(p, got.data());
      double max_ref = 0, max_diff = 0;
      for (std::size_t e = 0; e < n; ++e) {
        max_ref = std::max(max_ref, std::fabs(static_cast<double>(ref[e])));
        const double d = std::fabs(static_cast<double>(got[e]) - ref[e]);
        max_diff = std::isnan(d) ? 1e30 : std::max(max_diff, d);
      }
      worst = std::max(worst, max_diff / max_ref);
    }
    const bool ok = worst <= 1e-5;
    all_ok &= ok;
    std::printf("check %-9s max |C - C_openblas| / max |C_openblas| = %.2e  %s\n", v.name, worst,
                ok ? "ok" : "FAILED");
  }
#ifdef GLASS_HAVE_LIBXSMM
  if (!xsmm_ok) std::printf("libxsmm: a kernel could not be dispatched\n");
#endif

  // Hot: each distinct shape alone (the first product of each name and kind).
  std::printf("\nhot (operands in the cache), median of %d, alternating, us per product:\n", reps);
  std::printf("%-6s %-14s %5s %4s %4s", "weight", "product", "M", "N", "K");
  for (const Variant& v : variants) std::printf(" %12s", v.name);
  std::printf("\n");
  std::vector<std::string> seen;
  std::vector<std::vector<double>> hot_time(variants.size());  // per variant, per seen shape
  for (const Product& p : step) {
    const std::string key = std::string(p.name) + kind_name(p.kind);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    std::vector<float> c(static_cast<std::size_t>(out_rows(p)) * out_cols(p));
    const int K = p.kind == Product::kForward ? p.in : p.kind == Product::kGradX ? p.out : p.rows;
    std::printf("%-6s %-14s %5d %4d %4d", p.name, kind_name(p.kind), out_rows(p), out_cols(p), K);
    std::vector<std::vector<double>> t(variants.size());
    for (int r = 0; r < reps + 3; ++r) {  // the variants alternate, repetition by repetition
      for (std::size_t vi = 0; vi < variants.size(); ++vi) {
        const auto t0 = Clock::now();
        variants[vi].run(p, c.data());
        if (r >= 3) t[vi].push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      }
    }
    for (std::size_t vi = 0; vi < variants.size(); ++vi) {
      const double s = median(t[vi]);
      hot_time[vi].push_back(s);
      std::printf(" %6.0f (%3.0fG)", s * 1e6, flops(p) / s * 1e-9);
    }
    std::printf("\n");
  }
  // The step's products summed, each at its shape's hot median (wq .. w2 occur once per layer).
  std::printf("%-33s", "sum over the step's 87 products");
  for (std::size_t vi = 0; vi < variants.size(); ++vi) {
    double total = 0;
    for (const Product& p : step) {
      const std::string key = std::string(p.name) + kind_name(p.kind);
      total += hot_time[vi][std::find(seen.begin(), seen.end(), key) - seen.begin()];
    }
    std::printf(" %7.2f ms    ", total * 1e3);
  }
  std::printf("\n");

  // own_avx2's packing alone, summed over the step's products: what packing each weight only
  // once per step could at most save (forward W^T and dX W panels), and dW's activation packing.
  {
    double pack_fwd = 0, pack_dx = 0, pack_dw = 0;
    for (const Product& p : step) {
      const int R = p.rows, O = p.out, I = p.in;
      float* buf = pack_buffer(static_cast<std::size_t>(R) * (I + kNr) +
                               static_cast<std::size_t>(R) * (O + kMr));
      std::vector<double> t;
      for (int r = 0; r < reps + 3; ++r) {
        const auto t0 = Clock::now();
        if (p.kind == Product::kForward)
          pack_transposed(p.w.data(), I, O, buf);
        else if (p.kind == Product::kGradX)
          pack_rows(p.w.data(), O, I, I, buf);
        else {
          pack_rows(p.x.data(), R, I, I, buf);
          pack_a_transposed(p.dy.data(), R, O,
                            buf + static_cast<std::size_t>(R) * ((I + kNr - 1) / kNr * kNr));
        }
        if (r >= 3) t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      }
      (p.kind == Product::kForward ? pack_fwd
       : p.kind == Product::kGradX ? pack_dx
                                   : pack_dw) += median(t);
    }
    std::printf(
        "own_avx2 packing per step (hot): forward W^T %.0f us, dX W %.0f us, "
        "dW X and dY^T %.0f us\n",
        pack_fwd * 1e6, pack_dx * 1e6, pack_dw * 1e6);
  }

  // As in the step: the 87 products in order, fresh output memory each.
  double total_flops = 0;
  for (const Product& p : step) total_flops += flops(p);
  std::printf(
      "\nas in the step (%zu products, %.3f GFLOP, own operands and outputs), "
      "median of %d, alternating:\n",
      step.size(), total_flops * 1e-9, reps);
  std::vector<std::vector<double>> times(variants.size());
  std::vector<std::vector<float>> outs;
  for (const Product& p : step)
    outs.emplace_back(static_cast<std::size_t>(out_rows(p)) * out_cols(p), 0.0f);
  for (int r = 0; r < reps + 2; ++r) {
    for (std::size_t vi = 0; vi < variants.size(); ++vi) {
      const auto t0 = Clock::now();
      for (std::size_t i = 0; i < step.size(); ++i) variants[vi].run(step[i], outs[i].data());
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      if (r >= 2) times[vi].push_back(s);
    }
  }
  for (std::size_t vi = 0; vi < variants.size(); ++vi) {
    const double s = median(times[vi]);
    std::printf("  %-9s %7.2f ms  (%.0f GFLOP/s)  min %.2f max %.2f\n", variants[vi].name, s * 1e3,
                total_flops / s * 1e-9, *std::min_element(times[vi].begin(), times[vi].end()) * 1e3,
                *std::max_element(times[vi].begin(), times[vi].end()) * 1e3);
  }
  return all_ok ? 0 : 1;
}
