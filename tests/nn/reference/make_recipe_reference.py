#!/usr/bin/python3
"""Reference logits for tests/nn/recipe_options_reference.hpp: the small fixed model of
tests/nn/twin_reference.hpp with each recipe option on (QK-norm, the ReLU² MLP, logit
soft-capping), computed in NumPy float64, independently of the C++ code.

Run:  /usr/bin/python3 tests/nn/reference/make_recipe_reference.py   (Debian python3-numpy)

It prints the literals of recipe_options_reference.hpp. Before that it checks itself: with no
option on, the same NumPy model must give the PyTorch twin's logits stored in twin_reference.hpp
(to 1e-12), so the model below is the twin's, written out in NumPy; each option then changes one
line of it:
  QK-norm   q, k <- q / rms(q), k / rms(k) over head_dim (no gain, eps = norm_eps), before RoPE
            (modded-nanogpt's order; nanochat normalises after RoPE, the same numbers without a gain)
  ReLU²     ffn(x) = w2 (relu(w3 x))^2, parameters in the C++ order w2, w3
  softcap   logits <- c tanh(logits / c) with c = SOFTCAP
"""
import os
import re

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
V, D, L, H, HKV, F, EPS, BASE = 11, 16, 2, 4, 2, 24, 1e-5, 10000.0
HD = D // H
SOFTCAP = 1.5  # small, so that the cap bends the twin's logits (|logits| up to ~1.5) visibly


def reference_weight(p, i, is_gain):
    h = (i * 2654435761 + (p + 1) * 97531) & 0xFFFFFFFF
    u = (h >> 8) / 16777216.0
    return 1.0 + 0.5 * (u - 0.5) if is_gain else 0.6 * (u - 0.5)


def param(p, shape, is_gain=False):
    n = int(np.prod(shape))
    return np.array([reference_weight(p, i, is_gain) for i in range(n)]).reshape(shape)


def tokens():
    return np.array([[(3 * b + 5 * t + 1) % 11 for t in range(7)] for b in range(2)])


def rms_norm(x, gain):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + EPS) * gain


def rope(x):  # (B, T, heads, HD), interleaved pairs, positions 0 .. T-1
    T = x.shape[1]
    angle = np.arange(T)[:, None] * BASE ** (-2.0 * np.arange(HD // 2)[None, :] / HD)
    c, s = np.cos(angle)[None, :, None, :], np.sin(angle)[None, :, None, :]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = x0 * c - x1 * s
    out[..., 1::2] = x0 * s + x1 * c
    return out


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def logits(qk_norm=False, mlp="swiglu", softcap=0.0):
    p = 0
    emb = param(p, (V, D)); p += 1
    ids = tokens()
    x = emb[ids]  # (B, T, D)
    B, T = ids.shape
    for _ in range(L):
        g_attn = param(p, (D,), True); p += 1
        wq = param(p, (H * HD, D)); p += 1
        wk = param(p, (HKV * HD, D)); p += 1
        wv = param(p, (HKV * HD, D)); p += 1
        wo = param(p, (D, H * HD)); p += 1
        g_ffn = param(p, (D,), True); p += 1
        if mlp == "swiglu":
            w1 = param(p, (F, D)); p += 1
            w2 = param(p, (D, F)); p += 1
            w3 = param(p, (F, D)); p += 1
        else:
            w2 = param(p, (D, F)); p += 1
            w3 = param(p, (F, D)); p += 1
        h = rms_norm(x, g_attn)
        q = (h @ wq.T).reshape(B, T, H, HD)
        k = (h @ wk.T).reshape(B, T, HKV, HD)
        v = (h @ wv.T).reshape(B, T, HKV, HD)
        if qk_norm:
            q, k = rms_norm(q, np.ones(HD)), rms_norm(k, np.ones(HD))
        q, k = rope(q), rope(k)
        k = np.repeat(k, H // HKV, axis=2)  # query head h uses KV head h // (H / HKV)
        v = np.repeat(v, H // HKV, axis=2)
        scores = np.einsum("bthd,bshd->bhts", q, k) / np.sqrt(HD)
        scores = np.where(np.triu(np.ones((T, T), bool), 1), -np.inf, scores)
        mix = np.einsum("bhts,bshd->bthd", softmax(scores), v).reshape(B, T, H * HD)
        x = x + mix @ wo.T
        h = rms_norm(x, g_ffn)
        if mlp == "swiglu":
            gate = h @ w1.T
            x = x + (gate / (1 + np.exp(-gate)) * (h @ w3.T)) @ w2.T
        else:
            x = x + (np.maximum(h @ w3.T, 0) ** 2) @ w2.T
    g = param(p, (D,), True); p += 1
    out = param(p, (V, D)); p += 1
    z = rms_norm(x, g) @ out.T
    return softcap * np.tanh(z / softcap) if softcap > 0 else z


def twin_literals():
    text = open(os.path.join(HERE, "..", "twin_reference.hpp")).read()
    body = text[text.index("twin_logits()"):]
    body = body[body.index("{", body.index("static")) + 1:body.index("};")]
    body = re.sub(r"//[^\n]*", "", body)
    return np.array([float(t) for t in body.replace("\n", " ").split(",") if t.strip()])


assert np.allclose(logits().ravel(), twin_literals(), rtol=0, atol=1e-12), "not the twin's model"
for name, kwargs in [("qk_norm", dict(qk_norm=True)), ("relu2", dict(mlp="relu2")),
                     ("softcap", dict(softcap=SOFTCAP))]:
    values = logits(**kwargs).ravel()
    print(f"// {name}: logits (2, 7, 11), row-major, NumPy {np.__version__}, float64")
    for i in range(0, len(values), 4):
        print("      " + ", ".join(repr(float(v)) for v in values[i:i + 4]) + ",")
