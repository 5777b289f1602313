#include "train/muon.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xtensor/xmanipulation.hpp>

#include "autograd/blas.hpp"
#include "autograd/threads.hpp"

namespace glass {
inline namespace GLASS_PRECISION {

namespace {

std::string shape_text(const std::vector<std::size_t>& shape) {
  return fmt::format("({})", fmt::join(shape, ", "));
}

template <typename T>
void require_matrix(const Matrix<T>& m, const char* what) {
  if (m.dimension() != 2)
    throw std::invalid_argument(
        fmt::format("{}: expected a matrix (2-D), got shape {}", what,
                    shape_text(std::vector<std::size_t>(m.shape().begin(), m.shape().end()))));
}

/// ||X||_F, summed in double.
template <typename T>
double frobenius_norm(const Matrix<T>& X) {
  double sum = 0;
  for (const T x : X) sum += static_cast<double>(x) * static_cast<double>(x);
  return std::sqrt(sum);
}

}  // namespace

template <typename T>
Matrix<T> newton_schulz5(const Matrix<T>& G, int steps, double eps) {
  require_matrix(G, "newton_schulz5");
  const bool tall = G.shape(0) > G.shape(1);
  // X (m, n) with m <= n, so that A = X X^T is the smaller (m, m) Gram matrix.
  Matrix<T> X = tall ? Matrix<T>(xt::transpose(G)) : G;
  X /= static_cast<T>(frobenius_norm(X) + eps);  // ||X||_2 <= ||X||_F, so every sigma <= 1
  const int m = blas::as_int(X.shape(0)), n = blas::as_int(X.shape(1));
  const T a = static_cast<T>(kNewtonSchulzA), b = static_cast<T>(kNewtonSchulzB),
          c = static_cast<T>(kNewtonSchulzC);
  Matrix<T> A = Matrix<T>::from_shape({X.shape(0), X.shape(0)});
  Matrix<T> B = A, next = X;
  for (int k = 0; k < steps; ++k) {
    blas::gemm(false, true, m, m, n, T(1), X.data(), n, X.data(), n, T(0), A.data(), m);  // X X^T
    B = b * A;
    blas::gemm(false, false, m, m, m, c, A.data(), m, A.data(), m, T(1), B.data(), m);  // + c A^2
    next = a * X;
    blas::gemm(false, false, m, n, m, T(1), B.data(), m, X.data(), n, T(1), next.data(), n);  // +BX
    std::swap(X, next);
  }
  return tall ? Matrix<T>(xt::transpose(X)) : X;
}

template <typename T>
void muon_update(Matrix<T>& param, const Matrix<T>& grad, Matrix<T>& momentum, double lr,
                 const MuonConfig& config) {
  require_matrix(param, "muon_update");
  if (grad.shape() != param.shape() || momentum.shape() != param.shape())
    throw std::invalid_argument("muon_update: param, grad and momentum must have the same shape");
  const T beta = static_cast<T>(config.momentum);
  momentum = beta * momentum + grad;                // buf <- beta buf + g
  const Matrix<T> update = grad + beta * momentum;  // Nesterov: g + beta buf
  const Matrix<T> O = newton_schulz5(update, config.ns_steps, config.eps);
  const double rows = static_cast<double>(param.shape(0)),
               cols = static_cast<double>(param.shape(1));
  const double scale = std::sqrt(std::max(1.0, rows / cols));  // (out, in): out / in
  param -= static_cast<T>(lr * scale) * O;
}

template Matrix<float> newton_schulz5(const Matrix<float>&, int, double);
template Matrix<double> newton_schulz5(const Matrix<double>&, int, double);
template void muon_update(Matrix<float>&, const Matrix<float>&, Matrix<float>&, double,
                          const MuonConfig&);
template void muon_update(Matrix<double>&, const Matrix<double>&, Matrix<double>&, double,
                          const MuonConfig&);

Muon::Muon(const std::vector<std::pair<std::string, Tensor>>& params, MuonConfig config)
    : config_(config) {
  for (const auto& [name, p] : params) {
    if (p.dim() != 2)
      throw std::invalid_argument(fmt::format(
          "Muon: parameter '{}' has shape {}: Muon orthogonalizes matrices (2-D); give 1-D "
          "parameters such as RMSNorm gains to AdamW (split_for_muon)",
          name, shape_text(p.shape())));
    MuonParam entry{name, p, Array::from_shape(p.value().shape())};
    entry.momentum.fill(Scalar(0));
    params_.push_back(std::move(entry));
  }
}

void Muon::step(double lr) {
  ++step_count_;
  // One matrix per thread at a time, each product on one BLAS thread: which thread takes which
  // matrix changes nothing in its arithmetic. The BLAS thread count is given back afterwards.
  const int threads = static_cast<int>(num_threads());
  const int blas_before = openblas_get_num_threads();
  set_blas_threads(1);
  // An exception may not leave an OpenMP region (it would terminate the program): the first one
  // thrown (a wrong-shaped gradient, no memory) is kept and thrown again after the loop.
  std::exception_ptr failure;
  const long n = static_cast<long>(params_.size());
#pragma omp parallel for num_threads(threads) schedule(dynamic) if (threads > 1)
  for (long i = 0; i < n; ++i) {
    MuonParam& entry = params_[static_cast<std::size_t>(i)];
    if (!entry.param.has_grad()) continue;
    try {
      muon_update(entry.param.value(), entry.param.grad(), entry.momentum, lr, config_);
    } catch (...) {
#pragma omp critical(muon_step_failure)
      if (!failure) failure = std::current_exception();
    }
  }
  set_blas_threads(static_cast<std::size_t>(blas_before));
  if (failure) std::rethrow_exception(failure);
}

bool is_muon_param(const std::string& name, const Tensor& param) {
  return param.dim() == 2 && name.rfind("layers.", 0) == 0;
}

MuonSplit split_for_muon(const std::vector<std::pair<std::string, Tensor>>& params) {
  MuonSplit split;
  for (const auto& named : params)
    (is_muon_param(named.first, named.second) ? split.muon : split.adamw).push_back(named);
  return split;
}

}  // namespace GLASS_PRECISION
}  // namespace glass
