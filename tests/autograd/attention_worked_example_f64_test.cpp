// The worked example of docs/atencao.md in double precision (same test body as the float build).
#include "autograd/attention_worked_example_test.cpp"
