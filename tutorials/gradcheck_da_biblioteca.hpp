#pragma once
// The library's gradient check of the ops a chapter teaches (what `glass gradcheck --op NAME`
// prints), for the float chapters: the suite runs in double precision (autograd/gradcheck_suite.hpp
// names glass::f64 explicitly), because in float the finite differences are noise (chapter 07).
// tutorials/CMakeLists.txt links the double libraries into every float chapter for this.

#include <cstdio>
#include <string>

#include "autograd/gradcheck_suite.hpp"

namespace tut {

/// Runs the cases of `op` (and its variants, "op/...") and prints one line per case:
/// "gradcheck softmax (3, 5) em double: PASS".
inline void gradcheck_da_biblioteca(const std::string& op) {
  for (const glass::f64::OpCheckRow& row : glass::f64::run_gradcheck_suite(op)) {
    std::printf("gradcheck %s %s em double: %s\n", row.op.c_str(), row.shapes.c_str(),
                row.passed ? "PASS" : "FAIL");
  }
}

}  // namespace tut
