// Seed 000's worked example in double precision (same test body as the float build).
#include "autograd/seed_attention_test.cpp"
