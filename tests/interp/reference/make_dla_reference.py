#!/usr/bin/python3
"""Reference values for DirectEffects.MatchesTheNumPyReference (tests/interp/logit_attribution_test.cpp):
direct logit attribution of three made-up parts of a residual stream of width 4, in float64 NumPy,
independently of the C++ code.

Run:  /usr/bin/python3 tests/interp/reference/make_dla_reference.py
and paste the printed literals into the test.

The stream x is the sum of the parts; the final RMSNorm's scale r = 1 / sqrt(mean(x^2) + eps) is
frozen at x's value; the logit is W_U[target] . (x * r * gain), and each part's direct effect is
part . (W_U[target] * gain * r). The effects sum to the logit.
"""
import numpy as np

parts = np.array([[0.5, -1.0, 2.0, 0.25],
                  [1.5, 0.5, -0.75, 1.0],
                  [-0.25, 2.0, 0.5, -1.5]])
unembed = np.array([0.3, -0.2, 0.7, 1.1])  # W_U[target]
gain = np.array([1.0, 0.5, 2.0, 1.5])
eps = 1e-5

x = parts.sum(axis=0)
r = 1.0 / np.sqrt((x * x).mean() + eps)
effects = parts @ (unembed * gain * r)
logit = unembed @ (x * r * gain)
assert abs(effects.sum() - logit) < 1e-12
print("scale =", repr(r))
print("effects =", ", ".join(repr(v) for v in effects))
print("logit =", repr(logit))
