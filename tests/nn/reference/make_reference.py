#!/usr/bin/python3
"""Reference logits for tests/nn/twin_reference.hpp, from the PyTorch twin of the model.

Run:  /usr/bin/python3 tests/nn/reference/make_reference.py [--write]   (Debian's python3-torch)

Without --write it prints the literals; with --write it puts them into tests/nn/twin_reference.hpp
(then `git diff` shows whether the stored values changed).

It builds the Decoder of the PyTorch twin (bench/torch_twin/model.py) with the small
configuration below, in float64, sets every weight by the same deterministic formula as the C++
test (reference_weight), runs the fixed tokens and prints the logits as a C++ initializer list
(or writes them into tests/nn/twin_reference.hpp).

The twin names its tensors differently; the C++ (Meta LLaMA) name -> twin name map is
twin_name() below. Parameters are numbered p = 0, 1, ... in the C++ order of
Decoder::named_parameters() (cxx_names()).
"""
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.normpath(os.path.join(HERE, "..", "..", "..", "bench", "torch_twin")))
import model as twin  # noqa: E402

CONFIG = dict(vocab_size=11, d_model=16, n_layers=2, n_heads=4, n_kv_heads=2, ffn_hidden=24,
              max_seq_len=16, rope_theta=10000.0, rope_style="interleaved", norm_eps=1e-5)
BATCH, LENGTH = 2, 7


def tokens():
    """tokens[b][t] = (3 b + 5 t + 1) mod 11."""
    return torch.tensor([[(3 * b + 5 * t + 1) % 11 for t in range(LENGTH)] for b in range(BATCH)])


def reference_weight(p, i, is_gain):
    """Element i (row-major, (out, in) layout) of parameter number p: a multiplicative hash of
    (p, i) mapped to u in [0, 1); weights 0.6 (u - 0.5), RMSNorm gains 1 + 0.5 (u - 0.5)."""
    h = (i * 2654435761 + (p + 1) * 97531) % 2**32
    u = (h >> 8) / 2**24
    return 1.0 + 0.5 * (u - 0.5) if is_gain else 0.6 * (u - 0.5)


def cxx_names(n_layers):
    names = ["tok_embeddings.weight"]
    for i in range(n_layers):
        names += [f"layers.{i}.{n}" for n in (
            "attention_norm.weight", "attention.wq.weight", "attention.wk.weight",
            "attention.wv.weight", "attention.wo.weight", "ffn_norm.weight",
            "feed_forward.w1.weight", "feed_forward.w2.weight", "feed_forward.w3.weight")]
    return names + ["norm.weight", "output.weight"]


def twin_name(name):
    return (name.replace("tok_embeddings", "tok_emb").replace("attention_norm", "attn_norm")
            .replace("attention.", "attn.").replace("feed_forward.", "ffn.")
            .replace("output.weight", "lm_head.weight"))


def main():
    cfg = twin.ModelConfig(**CONFIG)
    model = twin.Decoder(cfg).double()
    # The twin builds its RoPE tables in float32 (rope_tables' default dtype) and .double() only
    # widens them; rebuild them in float64 so that the reference is double-precision throughout.
    model.rope_cos, model.rope_sin = twin.rope_tables(cfg.head_dim, cfg.max_seq_len, cfg.rope_theta,
                                                      dtype=torch.float64)
    params = dict(model.named_parameters())
    names = cxx_names(cfg.n_layers)
    assert sorted(twin_name(n) for n in names) == sorted(params), "name map does not cover the twin"
    with torch.no_grad():
        for p, name in enumerate(names):
            w = params[twin_name(name)]
            flat = [reference_weight(p, i, name.endswith("norm.weight")) for i in range(w.numel())]
            w.copy_(torch.tensor(flat, dtype=torch.float64).view_as(w))
        logits, _ = model(tokens())
        # The twin's KV-cache path, in chunks of 4 and 3, must agree with the full forward.
        cache = twin.KVCache(cfg, BATCH, torch.float64)
        chunked = torch.cat([model(tokens()[:, :4], cache=cache)[0],
                             model(tokens()[:, 4:], cache=cache)[0]], dim=1)
        assert torch.allclose(chunked, logits, atol=1e-12)
    lines = [f"// logits ({BATCH}, {LENGTH}, {cfg.vocab_size}), row-major, torch {torch.__version__}, float64"]
    values = [repr(float(x)) for x in logits.flatten()]
    for k in range(0, len(values), 4):
        lines.append(", ".join(values[k:k + 4]) + ",")
    if "--write" in sys.argv[1:]:
        write_header(lines)
    else:
        print("\n".join("    " + line for line in lines))


def write_header(lines):
    """Replaces the literals of twin_logits() in twin_reference.hpp (the lines between
    `static const std::vector<double> logits = {` and `};`), written atomically."""
    path = os.path.join(HERE, "..", "twin_reference.hpp")
    with open(path, encoding="utf-8") as f:
        text = f.read().split("\n")
    start = next(i for i, line in enumerate(text) if "static const std::vector<double> logits = {" in line)
    end = next(i for i in range(start, len(text)) if text[i].strip() == "};")
    text[start + 1:end] = ["    " + line for line in lines]
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(text))
    os.replace(tmp, path)
    print(f"wrote {len(lines) - 1} lines of logits into {os.path.normpath(path)}")


if __name__ == "__main__":
    main()
