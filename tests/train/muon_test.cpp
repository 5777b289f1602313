// Muon (train/muon.hpp), in double precision: the quintic Newton-Schulz against the polar factor
// U V^T computed here independently, the singular values it leaves, two full steps against a
// Python reference, tall and wide matrices; which parameters Muon takes; any thread count gives
// the same bits.
#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include <gtest/gtest.h>
#include <xtensor/xmanipulation.hpp>

#include "autograd/blas.hpp"
#include "autograd/threads.hpp"
#include "nn/decoder.hpp"
#include "train/muon.hpp"

#include "fixtures.hpp"

using namespace glass;

namespace {

using Mat = Matrix<double>;

Mat random_matrix(std::size_t rows, std::size_t cols, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  Mat m = Mat::from_shape({rows, cols});
  for (double& x : m) x = normal(rng);
  return m;
}

/// X Y, by the definition (no BLAS: independent of the code under test).
Mat product(const Mat& X, const Mat& Y) {
  Mat out = Mat::from_shape({X.shape(0), Y.shape(1)});
  for (std::size_t i = 0; i < X.shape(0); ++i)
    for (std::size_t j = 0; j < Y.shape(1); ++j) {
      double s = 0;
      for (std::size_t k = 0; k < X.shape(1); ++k) s += X(i, k) * Y(k, j);
      out(i, j) = s;
    }
  return out;
}

Mat transposed(const Mat& X) { return Mat(xt::transpose(X)); }

/// The polar factor U V^T of G = U S V^T (G of full rank): the cubic Newton-Schulz iteration
/// X <- 1.5 X - 0.5 X X^T X from G / ||G||_F (every singular value in (0, 1]), which converges
/// to U V^T (Higham, "Functions of Matrices", 2008, section 8.3), run until it stops moving.
Mat polar_factor(const Mat& G) {
  double norm = 0;
  for (double x : G) norm += x * x;
  Mat X = G / std::sqrt(norm);
  for (int k = 0; k < 200; ++k) {
    const Mat next = 1.5 * X - 0.5 * product(product(X, transposed(X)), X);
    const double change = xt::amax(xt::abs(next - X))();
    X = next;
    if (change < 1e-15) break;
  }
  return X;
}

/// The eigenvalues of the symmetric matrix S, ascending (cyclic Jacobi rotations until the
/// off-diagonal part vanishes; Golub & Van Loan, "Matrix Computations", section 8.5).
std::vector<double> symmetric_eigenvalues(Mat S) {
  const std::size_t n = S.shape(0);
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (std::size_t p = 0; p < n; ++p)
      for (std::size_t q = p + 1; q < n; ++q) off += S(p, q) * S(p, q);
    if (off < 1e-30) break;
    for (std::size_t p = 0; p < n; ++p)
      for (std::size_t q = p + 1; q < n; ++q) {
        if (S(p, q) == 0) continue;
        const double theta = (S(q, q) - S(p, p)) / (2 * S(p, q));
        const double t = (theta >= 0 ? 1 : -1) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (std::size_t k = 0; k < n; ++k) {  // S <- J^T S J, columns then rows
          const double kp = S(k, p), kq = S(k, q);
          S(k, p) = c * kp - s * kq;
          S(k, q) = s * kp + c * kq;
        }
        for (std::size_t k = 0; k < n; ++k) {
          const double pk = S(p, k), qk = S(q, k);
          S(p, k) = c * pk - s * qk;
          S(q, k) = s * pk + c * qk;
        }
      }
  }
  std::vector<double> values;
  for (std::size_t i = 0; i < n; ++i) values.push_back(S(i, i));
  std::sort(values.begin(), values.end());
  return values;
}

/// Singular values of G, ascending: square roots of the eigenvalues of the smaller Gram matrix.
std::vector<double> singular_values(const Mat& G) {
  const Mat gram = G.shape(0) <= G.shape(1) ? product(G, transposed(G)) : product(transposed(G), G);
  std::vector<double> s = symmetric_eigenvalues(gram);
  for (double& x : s) x = std::sqrt(std::max(x, 0.0));
  return s;
}

/// Five steps of the quintic on one singular value: what newton_schulz5 does to each of them.
double quintic5(double x) {
  for (int k = 0; k < 5; ++k)
    x = kNewtonSchulzA * x + kNewtonSchulzB * x * x * x + kNewtonSchulzC * x * x * x * x * x;
  return x;
}

}  // namespace

TEST(NewtonSchulz, KeepsTheSingularVectorsAndMapsEachSingularValueByTheQuintic) {
  for (auto [rows, cols] : {std::pair<std::size_t, std::size_t>{4, 7}, {7, 4}, {5, 5}}) {
    const Mat G = random_matrix(rows, cols, 3 + rows);
    const Mat O = newton_schulz5(G);
    ASSERT_EQ(O.shape(0), rows);
    ASSERT_EQ(O.shape(1), cols);
    // O = U S' V^T with the U, V of G: (U V^T)^T O = V S' V^T is symmetric, and its eigenvalues
    // are S' = quintic5(S / ||G||_F), S the singular values of G.
    const Mat P = polar_factor(G);
    const Mat PtO = product(transposed(P), O);  // (cols, cols)
    EXPECT_LT(xt::amax(xt::abs(PtO - transposed(PtO)))(), 1e-12) << rows << "x" << cols;
    // O = P (P^T O) when rows <= cols (P P^T = I); for tall G, O = (O P^T) P.
    const Mat back = rows <= cols ? product(P, PtO) : product(product(O, transposed(P)), P);
    EXPECT_LT(xt::amax(xt::abs(back - O))(), 1e-12) << rows << "x" << cols;

    std::vector<double> s = singular_values(G);
    double norm = 0;
    for (double x : G) norm += x * x;
    norm = std::sqrt(norm) + 1e-7;
    std::vector<double> expected;
    for (double x : s) {
      ASSERT_GT(x / norm, 0.01);  // in the range the band below is promised for
      expected.push_back(quintic5(x / norm));
    }
    std::sort(expected.begin(), expected.end());
    const std::vector<double> got = singular_values(O);
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], expected[i], 1e-10) << rows << "x" << cols << " sigma " << i;
      // The band the coefficients are tuned for: every singular value of G / ||G||_F from 0.01
      // to 1 ends between 0.6818 and 1.1344 after five steps (the scalar map on 10^5 points,
      // printed by tests/train/reference/muon_reference.py; muon.py's docstring says
      // "S'_ii ~ Uniform(0.5, 1.5)").
      EXPECT_GT(got[i], 0.68);
      EXPECT_LT(got[i], 1.135);
    }
  }
}

TEST(NewtonSchulz, ATallMatrixIsOrthogonalizedAsItsTransposeAndMoreStepsApproachUVt) {
  const Mat G = random_matrix(6, 3, 11);
  const Mat tall = newton_schulz5(G), wide = newton_schulz5(transposed(G));
  EXPECT_EQ(tall, transposed(wide));  // the same arithmetic, on G^T (bit for bit)
  // The quintic does not converge to U V^T (it oscillates in its band), but its first steps
  // bring every singular value near 1: far closer to U V^T than G / ||G||_F is.
  const Mat P = polar_factor(G);
  double norm = 0;
  for (double x : G) norm += x * x;
  const double before = xt::amax(xt::abs(G / std::sqrt(norm) - P))();
  const double after = xt::amax(xt::abs(tall - P))();
  EXPECT_LT(after, 0.35);
  EXPECT_LT(after, before / 2);
  EXPECT_THROW(newton_schulz5(Mat::from_shape({3})), std::invalid_argument);
}

TEST(MuonUpdate, TwoStepsMatchThePythonReference) {
  // Reference: tests/train/reference/muon_reference.py (Python 3 floats, double precision),
  // muon.py's Muon written again (its momentum an average, ours a sum: the same update; the
  // script says why), printed and pasted here.
  const Mat tall_p = {{0.5, -0.25}, {1.0, 2.0}, {-0.75, 0.125}};
  const std::vector<Mat> tall_g = {{{0.1, -0.2}, {0.3, 0.05}, {-0.4, 0.25}},
                                   {{-0.5, 0.25}, {1.0, -1.0}, {0.2, 0.3}}};
  const double lrs[] = {0.02, 0.01};
  struct Case {
    Mat p;
    std::vector<Mat> g;
    std::vector<double> p_ref, buf_ref;
  };
  const std::vector<Case> cases = {
      {tall_p,
       tall_g,
       {0.5064117322837491, -0.2323849782160337, 0.977431000387658, 1.990903874823643,
        -0.742900862285344, 0.1069931076392302},
       {-0.405, 0.06, 1.285, -0.9525, -0.18, 0.5375}},
      {transposed(tall_p),
       {transposed(tall_g[0]), transposed(tall_g[1])},
       {0.5052351574875051, 0.9815724889815637, -0.7442035783284483, -0.2356173949404241,
        1.992573044893814, 0.11029743395429786},
       {-0.405, 1.285, -0.18, 0.06, -0.9525, 0.5375}},
  };
  for (const Case& c : cases) {
    Mat p = c.p, buf = Mat(xt::zeros<double>(c.p.shape()));
    for (int s = 0; s < 2; ++s) muon_update(p, c.g[s], buf, lrs[s]);
    for (std::size_t i = 0; i < 6; ++i) {
      EXPECT_NEAR(p.data()[i], c.p_ref[i], 1e-13) << p.shape(0) << "x" << p.shape(1) << " " << i;
      EXPECT_NEAR(buf.data()[i], c.buf_ref[i], 1e-12) << i;
    }
  }
}

TEST(MuonUpdate, ATallMatrixTakesTheLargerStepSqrtOfRowsOverCols) {
  // The same gradient, as a (4, 1) column and a (1, 4) row: both orthogonalize to g / |g|, and
  // the tall one (out 4 > in 1) moves sqrt(4) = 2 times as far.
  const Mat g = transposed(Mat{{0.3, -0.1, 0.2, 0.5}});
  Mat tall = xt::zeros<double>({4, 1}), wide = xt::zeros<double>({1, 4});
  Mat buf_tall = tall, buf_wide = wide;
  muon_update(tall, g, buf_tall, 0.1);
  muon_update(wide, transposed(g), buf_wide, 0.1);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(tall(i, 0), 2 * wide(0, i), 1e-15);
    // One singular value, |g| / (|g| + eps) ~ 1: the row is quintic5(1) g / |g|, |g| = sqrt(0.39).
    EXPECT_NEAR(wide(0, i), -0.1 * quintic5(1.0) * g(i, 0) / std::sqrt(0.39), 1e-6);
  }
  Mat bad = Mat::from_shape({4, 2});
  EXPECT_THROW(muon_update(tall, bad, buf_tall, 0.1), std::invalid_argument);
}

TEST(Muon, TakesTheBlockMatricesAndLeavesEmbeddingsHeadAndGainsToAdamW) {
  const ModelConfig c = glass_test::small_config(11, 16);
  Decoder model(c, 1);
  const MuonSplit split = split_for_muon(model.named_parameters());
  std::vector<std::string> muon, adamw;
  for (const auto& [name, p] : split.muon) muon.push_back(name);
  for (const auto& [name, p] : split.adamw) adamw.push_back(name);
  ASSERT_EQ(muon.size(), 7 * c.n_layers);  // wq wk wv wo w1 w2 w3 per block
  for (const char* m : {"attention.wq", "attention.wk", "attention.wv", "attention.wo",
                        "feed_forward.w1", "feed_forward.w2", "feed_forward.w3"})
    for (std::size_t i = 0; i < c.n_layers; ++i)
      EXPECT_NE(
          std::find(muon.begin(), muon.end(), "layers." + std::to_string(i) + "." + m + ".weight"),
          muon.end())
          << m;
  EXPECT_EQ(muon.size() + adamw.size(), model.named_parameters().size());
  for (const char* a : {"tok_embeddings.weight", "output.weight", "norm.weight",
                        "layers.0.attention_norm.weight", "layers.0.ffn_norm.weight"})
    EXPECT_NE(std::find(adamw.begin(), adamw.end(), a), adamw.end()) << a;
}

TEST(Muon, RefusesAOneDimensionalParameterNamingIt) {
  const Tensor W = Tensor::zeros({3, 2}, true), gain = Tensor::ones({3}, true);
  try {
    Muon muon({{"W", W}, {"norm.weight", gain}});
    FAIL() << "a 1-D parameter was taken";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'norm.weight' has shape (3)"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("AdamW"), std::string::npos) << e.what();
  }
}

TEST(Muon, StepsEveryMatrixWithAGradientAndAnyThreadCountGivesTheSameBits) {
  const ModelConfig c = glass_test::small_config(11, 16);
  std::vector<std::vector<double>> weights;
  for (std::size_t threads : {1u, 2u, 3u}) {
    set_num_threads(threads);
    Decoder model(c, 14);
    MuonSplit split = split_for_muon(model.named_parameters());
    Muon muon(split.muon);
    std::mt19937_64 rng(15);  // the same gradients for every thread count
    std::normal_distribution<double> normal(0.0, 0.1);
    const std::vector<double> before(split.muon[0].second.value().begin(),
                                     split.muon[0].second.value().end());
    for (int step = 0; step < 2; ++step) {
      for (auto& [name, p] : split.muon)
        for (Scalar& g : p.grad()) g = static_cast<Scalar>(normal(rng));
      muon.step(2e-2);
    }
    EXPECT_EQ(muon.step_count(), 2);
    const std::vector<double> after(split.muon[0].second.value().begin(),
                                    split.muon[0].second.value().end());
    EXPECT_NE(before, after);
    std::vector<double> w;
    for (const auto& [name, p] : split.muon) w.insert(w.end(), p.value().begin(), p.value().end());
    weights.push_back(w);
  }
  set_num_threads(1);
  EXPECT_EQ(weights[0], weights[1]);
  EXPECT_EQ(weights[0], weights[2]);
}

TEST(Muon, AFailingMatrixIsThrownAfterTheThreadsAndGivesTheBlasThreadsBack) {
  const ModelConfig c = glass_test::small_config(11, 16);
  const std::size_t threads_before = num_threads();
  for (std::size_t threads : {1u, 2u}) {
    set_num_threads(threads);
    set_blas_threads(2);  // step() runs each product on 1 BLAS thread, then gives the 2 back
    Decoder model(c, 14);
    MuonSplit split = split_for_muon(model.named_parameters());
    Muon muon(split.muon);
    for (auto& [name, p] : split.muon) p.grad().fill(Scalar(0.1));
    split.muon[1].second.grad() = Array::from_shape({3, 3});  // not the shape of its matrix
    EXPECT_THROW(muon.step(2e-2), std::invalid_argument) << threads << " threads";
    EXPECT_EQ(openblas_get_num_threads(), 2) << threads << " threads";
  }
  set_num_threads(threads_before);
}
