#!/usr/bin/env python3
"""Reference values of llama2.c's int8 quantizer (export.py: quantize_q80), checked by
tests/export/export_llama2c_int8_test.cpp.

Plain Python (no NumPy, no PyTorch), float32 emulated exactly: each float32 operation is done in
double and rounded to float32 (f32 below), which for one division gives the correctly rounded
float32 quotient. Per group of GROUP_SIZE consecutive weights:

  scale = f32(max|w| / 127)        (torch: wmax / 127.0 on a float32 tensor)
  q     = round(f32(w / scale))    (torch.round: halves to even, as Python's round)
  a group of zeros: scale 0, q 0   (torch would divide 0 by 0; the exporter writes 0)

  python3 tests/export/reference/llama2c_int8.py
"""
import struct

GROUP_SIZE = 8


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def quantize(w, group_size=GROUP_SIZE):
    q, scales = [], []
    for g in range(0, len(w), group_size):
        group = [f32(x) for x in w[g:g + group_size]]
        scale = f32(max(abs(x) for x in group) / 127.0)
        scales.append(scale)
        q += [0 if scale == 0 else round(f32(x / scale)) for x in group]
    return q, scales


def lcg_row(n, state=7):
    """n float32 values in about [-0.1, 0.1): a fixed generator, so the row is reproducible."""
    out = []
    for _ in range(n):
        state = (state * 1664525 + 1013904223) % 2**32
        out.append(f32(((state >> 8) / 2**24 - 0.5) * 0.2))
    return out


ROWS = {
    # scale 1 exactly: the halves 0.5, 2.5, -2.5, -0.5 go to the even neighbour (round half
    # away from zero would give 1, 3, -3, -1), 63.5 to 64, -126.5 to -126.
    "ties": [127.0, 0.5, 1.5, 2.5, -2.5, -0.5, 63.5, -126.5],
    # the largest magnitude negative: it gets -127.
    "negative_max": [-3.0, 1.0, 0.75, -1.5, 2.0, 0.0, -0.25, 3e-3],
    "zeros": [0.0] * 8,
    # max|w| / 127 in float32 is not max|w| * f32(1 / 127) here: the scale is a division.
    "division": [0.13380266726016998, -0.1, 0.05, 0.0625, -0.125, 0.01, 0.12, -0.03],
    # two groups of ordinary weights.
    "weights": lcg_row(16),
}

if __name__ == "__main__":
    for name, w in ROWS.items():
        q, scales = quantize(w)
        print(f"// {name}")
        print("w:      {" + ", ".join(f"{x!r}f" for x in w) + "}")
        print("q:      {" + ", ".join(str(v) for v in q) + "}")
        print("scales: {" + ", ".join(f"{s:.9g}f" for s in scales) + "}")
