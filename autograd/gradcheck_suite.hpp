#pragma once
// The gradient check of every op on small random inputs, in double precision: what
// `glass gradcheck` prints and what tests/autograd/gradcheck_ops_f64_test.cpp asserts.
//
// The suite is compiled only into the double library (glass_autograd_f64). This header uses
// only std types and names glass::f64 explicitly, so float code (the `glass` program) can call
// it too.

#include <string>
#include <vector>

#if defined(GLASS_DOUBLE)
#include "autograd/scalar.hpp"  // in the double build glass::f64 is an inline namespace: declare it so first
#endif

namespace glass {
namespace f64 {

/// One row of the suite: one op (or one variant of an op) checked on one set of shapes.
struct OpCheckRow {
  std::string op;      ///< case name: the op, and after a '/' the variant, e.g. "matmul/batched"
  std::string shapes;  ///< input shapes, e.g. "(2, 3, 4), (4, 5)"
  double max_abs_error = 0;  ///< max |analytic - numeric| over all inputs
  double max_rel_error = 0;  ///< max relative error over all inputs (see gradcheck.hpp)
  bool passed = false;       ///< every input within tolerance
};

/// Runs every case (only == ""), or the cases named `only` or `only/<variant>` (so "matmul"
/// runs "matmul", "matmul/batched", ...). Throws std::invalid_argument listing the valid names
/// when nothing matches.
std::vector<OpCheckRow> run_gradcheck_suite(const std::string& only = "");

}  // namespace f64
}  // namespace glass
