#pragma once
// How the programs tune glibc's malloc for a training loop (see malloc_tuning.cpp).

namespace glass {

/// Call once at the start of a program that trains or generates: keeps freed memory in the
/// process (every step frees and reallocates the same activations; giving them back to the
/// kernel costs page faults) and turns off the fastbins — settings of glibc's malloc, which do
/// nothing when the program is linked with tcmalloc (CMakeLists.txt, GLASS_TCMALLOC) — and asks
/// for transparent huge pages for the tensors (see malloc_tuning.cpp; with tcmalloc only).
void tune_malloc_for_training();

}  // namespace glass
