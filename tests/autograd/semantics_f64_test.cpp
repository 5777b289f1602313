// Autograd semantics in double precision (same test body as the float build).
#include "autograd/semantics_test.cpp"
