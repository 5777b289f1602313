// The OpenBLAS core choice (blas_core.hpp) for the programs that have no line for it in their
// main: the tests (GoogleTest's own main), the benchmarks and the tutorial programs link this
// file (CMake: glass_blas_core_at_start), so that what is tested and timed runs the kernels the
// glass program runs. The glass program calls choose_at_start first thing in its main instead.
//
// A constructor of priority 101 runs before main and before the program's other constructors
// (which have no priority); OpenBLAS's own constructor has run already, its library being loaded
// first. glibc passes argc, argv and envp to such a constructor: argv is what the restart needs.

#include "autograd/blas_core.hpp"

namespace {

__attribute__((constructor(101))) void choose_blas_core_before_main(int, char** argv, char**) {
  glass::blas_core::choose_at_start(argv);
}

}  // namespace
