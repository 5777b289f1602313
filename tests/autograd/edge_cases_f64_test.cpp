// Edge cases in double precision (same test body as the float build).
#include "autograd/edge_cases_test.cpp"
