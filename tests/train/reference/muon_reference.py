#!/usr/bin/env python3
"""Reference values of tests/train/muon_test.cpp (MuonUpdate.TwoStepsMatchThePythonReference).

Muon as Keller Jordan's muon.py (github.com/KellerJordan/Muon: zeropower_via_newtonschulz5,
muon_update, nesterov=True, ns_steps=5), written again here in plain Python floats (double
precision, no NumPy), with muon.py's momentum as a running average (lerp): the C++ keeps the sum
buf <- beta buf + g instead, (1 - beta)^-1 times this one, which gives the same update once it
is divided by its norm: u_sum / (|u_sum| + eps) = u_avg / (|u_avg| + (1 - beta) eps), so the
eps below is (1 - beta) * 1e-7 to reproduce the C++ to rounding.
Run: python3 tests/train/reference/muon_reference.py
"""

A, B, C = 3.4445, -4.7750, 2.0315


def transpose(X):
    return [list(r) for r in zip(*X)]


def matmul(X, Y):
    Yt = transpose(Y)
    return [[sum(x * y for x, y in zip(row, col)) for col in Yt] for row in X]


def zeropower_via_newtonschulz5(G, steps=5, eps=1e-7):
    X = [row[:] for row in G]
    tall = len(G) > len(G[0])
    if tall:
        X = transpose(X)
    norm = sum(x * x for row in X for x in row) ** 0.5
    X = [[x / (norm + eps) for x in row] for row in X]
    for _ in range(steps):
        Am = matmul(X, transpose(X))
        AA = matmul(Am, Am)
        Bm = [[B * a + C * aa for a, aa in zip(ra, raa)] for ra, raa in zip(Am, AA)]
        BX = matmul(Bm, X)
        X = [[A * x + bx for x, bx in zip(rx, rbx)] for rx, rbx in zip(X, BX)]
    if tall:
        X = transpose(X)
    return X


def muon_step(p, g, m_avg, lr, beta=0.95):
    """muon.py: momentum.lerp_(grad, 1 - beta); update = grad.lerp_(momentum, beta)."""
    rows, cols = len(p), len(p[0])
    m_avg = [[m + (1 - beta) * (gg - m) for m, gg in zip(rm, rg)] for rm, rg in zip(m_avg, g)]
    u = [[gg + beta * (m - gg) for gg, m in zip(rg, rm)] for rg, rm in zip(g, m_avg)]
    O = zeropower_via_newtonschulz5(u, eps=(1 - beta) * 1e-7)
    scale = max(1.0, rows / cols) ** 0.5
    p = [[x - lr * scale * o for x, o in zip(rp, ro)] for rp, ro in zip(p, O)]
    return p, m_avg


def run(name, p, grads, lrs):
    m = [[0.0] * len(p[0]) for _ in p]
    for g, lr in zip(grads, lrs):
        p, m = muon_step(p, g, m, lr)
    print(name, "param after", len(grads), "steps:")
    print(",\n".join(repr(x) for row in p for x in row))
    print(name, "momentum (the C++ sum buf = average / (1 - beta)):")
    print(",\n".join(repr(x / (1 - 0.95)) for row in m for x in row))


# The test's inputs (muon_test.cpp): a tall (3, 2) and a wide (2, 3) matrix, two steps each.
tall_p = [[0.5, -0.25], [1.0, 2.0], [-0.75, 0.125]]
tall_g = [[[0.1, -0.2], [0.3, 0.05], [-0.4, 0.25]], [[-0.5, 0.25], [1.0, -1.0], [0.2, 0.3]]]
run("tall", tall_p, tall_g, [0.02, 0.01])
wide_p = transpose(tall_p)
wide_g = [transpose(g) for g in tall_g]
run("wide", wide_p, wide_g, [0.02, 0.01])

# The band five quintic steps leave each singular value of X = u / |u|_F in, for singular
# values from 0.01 to 1 (the scalar map on 10^5 log-spaced points): 0.6818 to 1.1344.
values = []
for i in range(100001):
    x = 10 ** (-2 + 2 * i / 100000)
    for _ in range(5):
        x = A * x + B * x**3 + C * x**5
    values.append(x)
print("band of 5 quintic steps over [0.01, 1]: %.4f to %.4f" % (min(values), max(values)))
