#!/usr/bin/env python3
"""How well attribution patching ranks the heads that exact activation patching ranks.

For prompt pairs cut from a text (clean: `--length` characters; corrupted: one letter near the
end replaced), runs `glass inspect --attribution --json -` on a checkpoint and collects the rank
correlation (Spearman) over all heads of the gradient estimate grad . (clean - corrupted) against
exact patching of each head. With --metric logit-diff only pairs whose two prompts predict
different next tokens count (the difference needs two tokens). For each pair it also reads the
attention patterns of both prompts (`glass inspect --json -`) and reports, at the last query,
how far the patterns moved (total variation, 0..1) and how peaked the corrupted ones are (their
largest weight), and the same over the layers after the first at every query from the changed
letter on (those read the change through the heads before them): a pattern that moves far or a
softmax that is saturated is where a first-order estimate is expected to fail (Kramár et al.
2024, AtP*, section 3).

  python3 bench/attribution_agreement.py --checkpoint runs/domcasmurro \\
      --text data/corpora/domcasmurro.txt [--pairs 24] [--metric logit-diff|log-prob]

The figures count steps, not time: they do not depend on the machine's load.
"""
import argparse
import json
import random
import statistics
import subprocess


def glass_json(glass, args):
    r = subprocess.run([glass, "inspect"] + args + ["--json", "-"], capture_output=True, text=True)
    return json.loads(r.stdout) if r.returncode == 0 else None


def attention_patterns(glass, checkpoint, prompt, n_layers):
    """[layer][head][query] -> that query's attention row, from the snapshots of glass inspect."""
    snapshots = glass_json(glass, ["--checkpoint", checkpoint, "--prompt", prompt])["snapshots"]
    rows = []
    for layer in range(n_layers):
        s = snapshots[f"layers.{layer}.attn.softmax"]
        H, T, M = s["shape"]
        v = s["values"]  # nested [head][query][key], or flat row-major
        if isinstance(v[0], list):
            rows.append([[v[h][t] for t in range(T)] for h in range(H)])
        else:
            rows.append([[v[(h * T + t) * M:(h * T + t + 1) * M] for t in range(T)]
                         for h in range(H)])
    return rows


def pattern_movement(A, B, queries, layers):
    """Mean total variation between the rows of A and B, and mean largest weight of B's rows,
    over the heads of `layers` and the `queries`."""
    tv = [0.5 * sum(abs(x - y) for x, y in zip(A[L][h][t], B[L][h][t]))
          for L in layers for h in range(len(A[L])) for t in queries]
    peak = [max(B[L][h][t]) for L in layers for h in range(len(B[L])) for t in queries]
    return statistics.mean(tv), statistics.mean(peak)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--glass", default="build/glass")
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--text", required=True)
    ap.add_argument("--pairs", type=int, default=24)
    ap.add_argument("--length", type=int, default=24)
    ap.add_argument("--metric", default="logit-diff", choices=["logit-diff", "log-prob"])
    ap.add_argument("--seed", type=int, default=5)
    a = ap.parse_args()
    text = open(a.text, encoding="utf-8").read()
    rng = random.Random(a.seed)
    rows, tried = [], 0
    while len(rows) < a.pairs and tried < 50 * a.pairs:
        tried += 1
        start = rng.randrange(0, len(text) - a.length)
        clean = text[start:start + a.length]
        p = rng.randrange(a.length * 2 // 3, a.length - 1)
        if "\n" in clean or not clean[p].isalpha():
            continue
        corrupted = clean[:p] + rng.choice([c for c in "aeiosrnmtdl" if c != clean[p]]) + clean[p + 1:]
        j = glass_json(a.glass, ["--checkpoint", a.checkpoint, "--prompt", clean, "--attribution",
                                 "--corrupted", corrupted, "--metric", a.metric])
        if j is None or j["attribution"]["spearman_heads"] is None:
            continue  # the same prediction (logit-diff), or no spread to rank
        at = j["attribution"]
        est = [v for row in at["estimate"]["heads"] for v in row]
        exact = [v for row in at["exact"]["heads"] for v in row]
        n_layers = len(at["estimate"]["heads"])
        A = attention_patterns(a.glass, a.checkpoint, clean, n_layers)
        B = attention_patterns(a.glass, a.checkpoint, corrupted, n_layers)
        tv, peak = pattern_movement(A, B, [a.length - 1], range(n_layers))
        # The layers after the first read the changed letter through the heads before them:
        # every query from the changed position on.
        tv_after, peak_after = pattern_movement(A, B, range(p, a.length), range(1, n_layers))
        rows.append({"clean": clean, "corrupted": corrupted, "rho": at["spearman_heads"],
                     "span": at["clean"] - at["corrupted_metric"],
                     "missed": sum(abs(e - x) for e, x in zip(est, exact)) / max(1e-9, sum(map(abs, exact))),
                     "tv": tv, "peak": peak, "tv_after": tv_after, "peak_after": peak_after})
    rhos = [r["rho"] for r in rows]
    print(f"{a.metric}: {len(rows)} pairs ({tried} tried); Spearman over the heads: mean "
          f"{statistics.mean(rhos):.3f}, sd {statistics.stdev(rhos):.3f}, median "
          f"{statistics.median(rhos):.3f}, min {min(rhos):.3f}, max {max(rhos):.3f}")
    print("  rho     span  missed  pattern TV  peak  TV>=p  peak>=p  pair")
    for r in sorted(rows, key=lambda r: r["rho"]):
        print(f"  {r['rho']:+.3f} {r['span']:+7.3f}  {r['missed']:5.2f}  {r['tv']:10.3f}  {r['peak']:.2f}"
              f"  {r['tv_after']:5.3f}  {r['peak_after']:7.2f}  {r['clean']!r} -> {r['corrupted']!r}")
    for name, group in (("rho < 0.8", [r for r in rows if r["rho"] < 0.8]),
                        ("rho >= 0.8", [r for r in rows if r["rho"] >= 0.8])):
        if group:
            print(f"{name}: {len(group)} pairs; mean |span| "
                  f"{statistics.mean(abs(r['span']) for r in group):.3f}, share of the exact effect "
                  f"missed {statistics.mean(r['missed'] for r in group):.2f}, pattern TV "
                  f"{statistics.mean(r['tv'] for r in group):.3f}, peak "
                  f"{statistics.mean(r['peak'] for r in group):.2f}; layers 1.. from the changed "
                  f"position on: pattern TV {statistics.mean(r['tv_after'] for r in group):.3f}, "
                  f"peak {statistics.mean(r['peak_after'] for r in group):.2f}")


if __name__ == "__main__":
    main()
