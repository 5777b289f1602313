#!/usr/bin/env python3
"""Reference answer of exercise 25 (tutorials/exercicios/25_volta_da_atencao.cpp), checked by
tests/cli/tutorials_test.cpp.

Plain Python, double precision: one causal attention head S = Q K^T / sqrt(d), P = softmax per
row over the unmasked keys, O = P V, and the gradients of L = sum(O * G) by central differences
(h = 1e-6), independent of any hand-written backward.

  python3 tests/cli/reference/volta_da_atencao.py
"""
import math

Q = [[1, 0.5, -1, 0], [0.2, -0.3, 0.8, 1], [-0.5, 1, 0.4, -0.2]]
K = [[0.3, -1, 0.5, 0.7], [1, 0.2, -0.4, 0.1], [-0.6, 0.3, 0.9, -1]]
V = [[1, 2, 0, -1], [0.5, -1, 1, 0], [-2, 0.5, 0.25, 1]]
G = [[1, 0, -1, 0.5], [0.3, 2, -0.5, 1], [-1, 0.4, 1.5, -0.2]]


def loss(q, k, v):
    n, d = len(q), len(q[0])
    total = 0.0
    for i in range(n):
        s = [sum(q[i][c] * k[j][c] for c in range(d)) / math.sqrt(d) for j in range(i + 1)]
        m = max(s)
        e = [math.exp(x - m) for x in s]
        p = [x / sum(e) for x in e]
        for c in range(d):
            total += G[i][c] * sum(p[j] * v[j][c] for j in range(i + 1))
    return total


grads = []
for which in range(3):
    for i in range(3):
        for c in range(4):
            mats = [[row[:] for row in m] for m in (Q, K, V)]
            mats[which][i][c] += 1e-6
            up = loss(*mats)
            mats[which][i][c] -= 2e-6
            down = loss(*mats)
            grads.append((up - down) / 2e-6)
print(" ".join("%.6f" % g for g in grads))
