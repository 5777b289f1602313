#!/usr/bin/env python3
"""Reference values of chapter 40 (tutorials/40_quantizacao.cpp), checked by
tests/cli/tutorials_test.cpp.

The blocks come from tests/export/reference/quantize_reference.py (ggml's reference quantizers
in plain Python, with Python's own IEEE half conversion), not from the C++ under test; the
errors and the chapter's measures are computed here from those bytes.

  python3 tests/cli/reference/quantizacao_capitulo.py
"""
import math
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "export", "reference"))
from quantize_reference import f32, q4_0, q8_0  # noqa: E402

ROW = [0.12, -0.53, 0.97, -1.27, 0.05, 0.33, -0.08, 0.61, -0.44, 0.20, 0.004, -0.71, 0.88, -0.15,
       0.26, -0.99, 0.47, 0.02, -0.36, 0.74, 1.21, -0.62, 0.09, -0.006, 0.55, -0.27, 0.31, 1.10,
       -0.83, 0.16, -0.02, 0.68]
GAINS = [0.96, 1.03, 0.91, 1.08, 0.99, 1.12, 0.94, 1.01, 0.88, 1.05, 0.97, 1.15, 0.93, 1.02, 0.98,
         1.09, 0.90, 1.06, 0.95, 1.00, 1.11, 0.92, 1.04, 0.97, 0.89, 1.07, 1.03, 0.96, 1.13, 0.94,
         1.01, 0.99]


def scale(block):
    return struct.unpack("<e", block[:2])[0]


def levels_q4(block):
    q = [0] * 32
    for j in range(16):
        q[j], q[j + 16] = block[2 + j] & 0x0F, block[2 + j] >> 4
    return q


def back_q8(block):
    return [f32(struct.unpack("b", bytes([c]))[0] * scale(block)) for c in block[2:]]


def back_q4(block):
    return [f32((q - 8) * scale(block)) for q in levels_q4(block)]


def spread_error(v, y):
    mean = sum(v) / len(v)
    return math.sqrt(sum((a - b) ** 2 for a, b in zip(v, y))) / math.sqrt(
        sum((a - mean) ** 2 for a in v))


def main():
    x = [f32(v) for v in ROW]
    g = [f32(v) for v in GAINS]
    b8, b4 = q8_0(x), q4_0(x)
    print("Q8_0 bytes", b8.hex())
    print("Q4_0 bytes", b4.hex())
    print("Q8_0 d float32, fp16", f32(f32(1.27) / 127), scale(b8))
    print("Q8_0 q", [struct.unpack("b", bytes([c]))[0] for c in b8[2:]])
    y8, y4 = back_q8(b8), back_q4(b4)
    e8 = [abs(a - b) for a, b in zip(x, y8)]
    e4 = [abs(a - b) for a, b in zip(x, y4)]
    print("Q8_0 back x[0..8)", [round(v, 6) for v in y8[:8]])
    print("Q8_0 max error, d/2", max(e8), scale(b8) / 2)
    print("Q4_0 d float32, fp16", f32(f32(-1.27) / -8), scale(b4))
    print("Q4_0 q", levels_q4(b4))
    print("Q4_0 back x[0..8)", [round(v, 6) for v in y4[:8]])
    print("Q4_0 max error at", e4.index(max(e4)), max(e4), "d/2", scale(b4) / 2)
    print("RMS error Q8_0, Q4_0", math.sqrt(sum(e * e for e in e8) / 32),
          math.sqrt(sum(e * e for e in e4) / 32))
    print("row spread error Q8_0, Q4_0", spread_error(x, y8), spread_error(x, y4))
    g8, g4 = back_q8(q8_0(g)), back_q4(q4_0(g))
    print("gains spread error Q8_0, Q4_0", spread_error(g, g8), spread_error(g, g4))
    print("gains Q4_0 [0..16)", [round(v, 6) for v in g4[:16]])
    print("distinct gains Q8_0, Q4_0", len(set(g8)), len(set(g4)))
    other = list(x)
    other[20] = f32(-1.30)
    b = q4_0(other)
    print("answer 1: Q4_0 d, q[20]", f32(f32(-1.30) / -8), levels_q4(b)[20], "fp16 d", scale(b))
    print("answer 2: zeros Q8_0", q8_0([0.0] * 32).hex(), "Q4_0", q4_0([0.0] * 32).hex())


if __name__ == "__main__":
    main()
