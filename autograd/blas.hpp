#pragma once
// Internal: one `gemm` name for both precisions, forwarding to OpenBLAS's cblas_sgemm (float)
// or cblas_dgemm (double). Row-major only:
//   C (M, N) = alpha * op(A) (M, K) @ op(B) (K, N) + beta * C
// where op(X) = X or X^T according to trans_a / trans_b, and lda/ldb/ldc are the row strides
// (number of columns) of A, B, C as they are stored in memory.

#include <cblas.h>

#include <cstddef>

namespace glass::blas {

/// A size as BLAS's int argument (the model's sizes are far below INT_MAX).
inline int as_int(std::size_t n) { return static_cast<int>(n); }

inline void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                 int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

inline void gemm(bool trans_a, bool trans_b, int M, int N, int K, double alpha, const double* A,
                 int lda, const double* B, int ldb, double beta, double* C, int ldc) {
  cblas_dgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/// y (M) = op(A) x where A is stored row-major as (rows, cols) with row stride lda and
/// op(A) = A (M = rows) or A^T (M = cols). One row times a matrix: the gemm of a single
/// generated token, where OpenBLAS's gemv is much faster than its gemm.
inline void gemv(bool trans_a, int rows, int cols, float alpha, const float* A, int lda,
                 const float* x, float beta, float* y) {
  cblas_sgemv(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, rows, cols, alpha, A, lda, x, 1,
              beta, y, 1);
}

inline void gemv(bool trans_a, int rows, int cols, double alpha, const double* A, int lda,
                 const double* x, double beta, double* y) {
  cblas_dgemv(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, rows, cols, alpha, A, lda, x, 1,
              beta, y, 1);
}

}  // namespace glass::blas
