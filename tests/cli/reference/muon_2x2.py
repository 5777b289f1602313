#!/usr/bin/env python3
"""Reference values of chapter 36 (tutorials/36_muon.cpp), checked by tests/cli/tutorials_test.cpp.

Plain Python (no NumPy), double precision, for G = [[1, 3], [0.5, 1.4]]: its singular values (the
square roots of the eigenvalues of G^T G), its polar factor U V^T = G (G^T G)^(-1/2), and the
singular values of Muon's quintic Newton-Schulz iteration and of the classic cubic one.

  python3 tests/cli/reference/muon_2x2.py
"""
import math


def mm(a, b):
    return [[sum(a[i][k] * b[k][j] for k in range(2)) for j in range(2)] for i in range(2)]


def t(a):
    return [[a[j][i] for j in range(2)] for i in range(2)]


def singular_values(a):
    m = mm(t(a), a)
    tr = m[0][0] + m[1][1]
    det = m[0][0] * m[1][1] - m[0][1] * m[1][0]
    d = math.sqrt(max(tr * tr / 4 - det, 0))
    return math.sqrt(tr / 2 + d), math.sqrt(max(tr / 2 - d, 0))


def polar(g):
    m = mm(t(g), g)
    s = math.sqrt(m[0][0] * m[1][1] - m[0][1] * m[1][0])
    r = math.sqrt(m[0][0] + m[1][1] + 2 * s)
    root = [[(m[0][0] + s) / r, m[0][1] / r], [m[1][0] / r, (m[1][1] + s) / r]]
    d = root[0][0] * root[1][1] - root[0][1] * root[1][0]
    inverse = [[root[1][1] / d, -root[0][1] / d], [-root[1][0] / d, root[0][0] / d]]
    return mm(g, inverse)


def newton_schulz(g, steps, a, b, c):
    norm = math.sqrt(sum(x * x for row in g for x in row))
    x = [[v / norm for v in row] for row in g]
    for _ in range(steps):
        gram = mm(x, t(x))
        gram2 = mm(gram, gram)
        poly = [[b * gram[i][j] + c * gram2[i][j] for j in range(2)] for i in range(2)]
        px = mm(poly, x)
        x = [[a * x[i][j] + px[i][j] for j in range(2)] for i in range(2)]
    return x


G = [[1.0, 3.0], [0.5, 1.4]]
print("singular values of G: %.6f %.6f" % singular_values(G))
print("U V^T:", ["%.6f" % v for row in polar(G) for v in row])
print("after 0 steps: %.6f %.6f" % singular_values(newton_schulz(G, 0, 1, 0, 0)))
x5 = newton_schulz(G, 5, 3.4445, -4.7750, 2.0315)
print("quintic, 5 steps: %.6f %.6f" % singular_values(x5))
print("X after 5 steps:", ["%.6f" % v for row in x5 for v in row])
for steps in (5, 10, 20):
    print("cubic, %d steps: %.6f %.6f" % ((steps,) + singular_values(newton_schulz(G, steps, 1.5, -0.5, 0))))
print("rank 1: %.6f %.6f" % singular_values([[1.0, 3.0], [0.5, 1.5]]))
