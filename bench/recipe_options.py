#!/usr/bin/env python3
"""The recipe options (--qk-norm, --mlp relu2, --logit-softcap C) against the default model.

For each option, runs two `glass train` at once on one thread each, side by side: the default
model and the same run with the option (same seed, data, recipe and steps), then prints the
validation loss of each at the evaluation steps and the ratio of their training tokens per second
(the option's over the default's, from the same pair: both ran under the same load). Steps are
what the machine's load does not change; the ratio is fair only because the pair shared it.

  python3 bench/recipe_options.py [--build build] [--iters 1000] [--eval-every 250]
                                  [--corpus data/corpora/tinyshakespeare.txt] [--markdown out.md]
"""
import argparse
import csv
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

OPTIONS = [("--qk-norm", "--qk-norm"), ("--mlp relu2", "--mlp relu2"),
           ("--mlp relu2 --ffn-hidden 512", "--mlp relu2 --ffn-hidden 512"),
           ("--logit-softcap 30", "--logit-softcap 30")]


def start(glass, corpus, out, iters, eval_every, extra):
    args = [glass, "train", "--data", corpus, "--out", out, "--iters", str(iters), "--eval-every",
            str(eval_every), "--threads", "1", "--sample-tokens", "0", "--no-interp-record"] + extra
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def read_log(out):
    with open(os.path.join(out, "log.csv")) as f:
        rows = list(csv.DictReader(f))
    val = {int(r["step"]): float(r["val_loss"]) for r in rows if r["val_loss"] not in ("", "nan")}
    speeds = [float(r["tokens_per_s"]) for r in rows if float(r["tokens_per_s"]) > 0]
    return val, sum(speeds) / len(speeds), float(rows[-1]["elapsed_s"])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--corpus", default=os.path.join(ROOT, "data", "corpora", "tinyshakespeare.txt"))
    p.add_argument("--iters", type=int, default=1000)
    p.add_argument("--eval-every", type=int, default=250)
    p.add_argument("--only", default="", help="comma-separated indexes of OPTIONS to run")
    p.add_argument("--markdown", default="")
    a = p.parse_args()
    glass = os.path.join(a.build, "glass")
    steps = list(range(a.eval_every, a.iters + 1, a.eval_every))
    chosen = [OPTIONS[int(i)] for i in a.only.split(",")] if a.only else OPTIONS
    lines = ["| run | " + " | ".join(f"val @ {s}" for s in steps) +
             " | tokens/s ratio (option / default, side by side) |",
             "|---|" + "---|" * len(steps) + "---|"]
    with tempfile.TemporaryDirectory() as tmp:
        for k, (name, flags) in enumerate(chosen):
            base, opt = os.path.join(tmp, f"default{k}"), os.path.join(tmp, f"option{k}")
            runs = [start(glass, a.corpus, base, a.iters, a.eval_every, []),
                    start(glass, a.corpus, opt, a.iters, a.eval_every, flags.split())]
            for r in runs:
                _, err = r.communicate()
                if r.returncode != 0:
                    sys.exit(f"glass train failed ({r.returncode}): {err}")
            (vb, sb, tb), (vo, so, to) = read_log(base), read_log(opt)
            if k == 0:
                lines.append("| default | " + " | ".join(f"{vb.get(s, float('nan')):.4f}" for s in steps) + " | 1 |")
            lines.append(f"| `{name}` | " + " | ".join(f"{vo.get(s, float('nan')):.4f}" for s in steps) +
                         f" | {so / sb:.2f} ({so:,.0f} / {sb:,.0f}; default beside it: val @ {steps[-1]} "
                         f"{vb.get(steps[-1], float('nan')):.4f}) |")
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if a.markdown:
        open(a.markdown, "w").write(text)


if __name__ == "__main__":
    main()
