#!/usr/bin/env python3
"""Reference values of chapter 37 (tutorials/37_backprop_a_mao.cpp), checked by
tests/cli/tutorials_test.cpp.

Plain Python, double precision, with the derivatives written out by hand (no autograd):
o = tanh(w1 x1 + w2 x2 + b), L = (o - y)^2, at x = (1, -2), w = (0.5, 0.25), b = 0.5, y = 1,
and the chapter's two variations (x2 = 0; b = 4).

  python3 tests/cli/reference/backprop_neuronio.py
"""
import math


def neuron(x1, x2, w1, w2, b, y):
    n = w1 * x1 + w2 * x2 + b
    o = math.tanh(n)
    loss = (o - y) ** 2
    dl_do = 2 * (o - y)
    do_dn = 1 - o * o
    dl_dn = dl_do * do_dn
    grads = [dl_dn * x1, dl_dn * x2, dl_dn, dl_dn * w1, dl_dn * w2]
    return n, o, loss, dl_do, do_dn, dl_dn, grads


def show(label, values):
    print(label + ": " + " ".join("%.6f" % v for v in values))


n, o, loss, dl_do, do_dn, dl_dn, grads = neuron(1, -2, 0.5, 0.25, 0.5, 1)
show("n o L", [n, o, loss])
show("dL/do do/dn dL/dn", [dl_do, do_dn, dl_dn])
show("dL/dw1 dL/dw2 dL/db dL/dx1 dL/dx2", grads)
show("x2 = 0", neuron(1, 0, 0.5, 0.25, 0.5, 1)[6])
n4, o4, _, _, do4, _, g4 = neuron(1, -2, 0.5, 0.25, 4, 1)
show("b = 4: n o 1-o^2", [n4, o4, do4])
print("b = 4: " + " ".join("%.8f" % v for v in g4))
# Chapter 03's L = (x y + x)^2 at x = 2, y = 3: dL/dx = 2 (xy + x)(y + 1) = 64, dL/dy = 2 (xy + x) x
# = 32. With '=' in place of '+=' (the backward order L, b, a): b gets 8 (the second of two 8s),
# x gets 8 from the sum, then y * 8 = 24 from the product; y gets x * 8 = 16.
