// PyTorch reference values in double precision (same test body as the float build).
#include "autograd/reference_values_test.cpp"
