#!/usr/bin/env python3
"""Reference values of tests/data/yardstick_test.cpp, computed apart from the C++ code:
the add-one character bigram's bits per byte and xz's (Python's lzma module: LZMA2 preset 9,
dictionary the smallest power of two >= the input, at least 4 KiB; check CRC64)."""
import lzma
import math
from collections import Counter

TRAIN = "o rato roeu a roupa do rei de roma. " * 6 + "a rainha, de raiva, roeu o resto.\n"
VAL = "o rei roeu a roupa da rainha: ração é ração!\n"


def bigram_bits_per_byte(train, val):
    pairs = Counter(zip(train, train[1:]))
    firsts = Counter(train[:-1])
    V = len(set(train) | set(val))
    bits = 0.0
    prev = train[-1]
    for c in val:
        bits += math.log2(firsts[prev] + V) - math.log2(pairs[(prev, c)] + 1)
        prev = c
    return bits / len(val.encode("utf-8"))


def xz_size(data):
    d = 4096
    while d < len(data) and d < (64 << 20):
        d *= 2
    filters = [{"id": lzma.FILTER_LZMA2, "preset": 9, "dict_size": d}]
    return len(lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, filters=filters))


t, v = TRAIN.encode("utf-8"), VAL.encode("utf-8")
print("train bytes", len(t), "val bytes", len(v))
print("bigram bits per byte %.12f" % bigram_bits_per_byte(TRAIN, VAL))
print("xz(train) %d xz(train+val) %d" % (xz_size(t), xz_size(t + v)))
print("xz bits per byte %.12f" % ((xz_size(t + v) - xz_size(t)) * 8 / len(v)))
