#!/usr/bin/env python3
"""The recipe search, measured in steps: for each variant of `glass train`'s default recipe on
tinyshakespeare (char), the first evaluation at or below each target validation loss and the
validation loss at fixed steps. Step counts do not depend on the machine's load, so the runs may
share a busy machine; their speed is measured apart (`--speed`), in alternating pairs against
the default.

  python3 bench/recipe_search.py --glass build/glass --runs DIR [--jobs 2] [--iters 2000]
      [--eval-every 50] [--variant NAME='FLAGS' ...] [--only NAME,...]
  python3 bench/recipe_search.py --glass build/glass --runs DIR --table     # the table only
  python3 bench/recipe_search.py --glass build/glass --runs DIR --speed [--pairs 2] [--speed-iters 60]

Every run trains with `--threads 1 --eval-every 50 --sample-tokens 0 --no-interp-record` into
DIR/NAME and is skipped when DIR/NAME/log.csv already reaches --iters. `--speed` trains each
variant and the default `--speed-iters` steps, alternating (default, variant, default, variant,
...), and prints the variant's training tokens per second over the default's (the log.csv row of
the last evaluation: training time only, evaluations left out).
"""
import argparse
import csv
import os
import shlex
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
TEXT = os.path.join(os.path.dirname(HERE), "data", "corpora", "tinyshakespeare.txt")

# The variants: the default recipe (batch 12 x 64, d_model 128, 4 layers, 4 heads, ffn 344,
# AdamW lr 1e-3, warmup 100, cosine to 2000) and one change each, or a few together.
VARIANTS = {
    "default": "",
    "lr2e-3": "--lr 2e-3",
    "lr3e-3": "--lr 3e-3",
    "warmup20": "--warmup 20",
    "muon0.01": "--optimizer muon --muon-lr 0.01",
    "muon0.02": "--optimizer muon --muon-lr 0.02",
    "zero-init": "--zero-init-out",
    "muon0.01-zero": "--optimizer muon --muon-lr 0.01 --zero-init-out",
    "lr2e-3-zero": "--lr 2e-3 --zero-init-out",
    "muon0.02-zero": "--optimizer muon --muon-lr 0.02 --zero-init-out",
    "muon0.01-zero-w20": "--optimizer muon --muon-lr 0.01 --zero-init-out --warmup 20",
    "muon0.01-zero-d300": "--optimizer muon --muon-lr 0.01 --zero-init-out --decay-iters 300",
    "muon0.01-zero-l2": "--optimizer muon --muon-lr 0.01 --zero-init-out --n-layers 2",
    "muon0.01-zero-l3": "--optimizer muon --muon-lr 0.01 --zero-init-out --n-layers 3",
    "muon0.01-zero-b8": "--optimizer muon --muon-lr 0.01 --zero-init-out --batch-size 8",
    "batch24": "--batch-size 24",
    "batch8": "--batch-size 8",
    "context128": "--context 128",
    "context32": "--context 32",
    "d96": "--d-model 96 --ffn-hidden 256",
    "d192": "--d-model 192 --n-heads 6 --ffn-hidden 512",
    "layers2": "--n-layers 2",
    "layers6": "--n-layers 6",
    "ffn256": "--ffn-hidden 256",
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--glass", required=True)
    p.add_argument("--runs", required=True, help="directory of the runs (one folder per variant)")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--iters", type=int, default=2000)
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--variant", action="append", default=[], help="NAME='FLAGS' (added or replaced)")
    p.add_argument("--only", default="", help="comma-separated names of the variants to run")
    p.add_argument("--targets", default="1.88,1.60")
    p.add_argument("--at", default="250,500,1000,2000", help="steps whose val loss is shown")
    p.add_argument("--table", action="store_true", help="print the table of the runs done, run nothing")
    p.add_argument("--speed", action="store_true", help="tokens/s against the default, in pairs")
    p.add_argument("--pairs", type=int, default=2)
    p.add_argument("--speed-iters", type=int, default=60)
    return p.parse_args()


def train(glass, out, flags, iters, eval_every):
    cmd = [glass, "train", "--data", TEXT, "--out", out, "--overwrite", "--threads", "1",
           "--iters", str(iters), "--eval-every", str(eval_every), "--sample-tokens", "0",
           "--no-interp-record"] + shlex.split(flags)
    with open(out + ".txt", "w") as log:
        subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, check=True)


def read_log(path):
    """(step, val_loss, tokens_per_s) of each row of a run's log.csv."""
    with open(path) as f:
        return [(int(r["step"]), float(r["val_loss"]), float(r["tokens_per_s"]))
                for r in csv.DictReader(f)]


def done(run_dir, iters):
    path = os.path.join(run_dir, "log.csv")
    return os.path.exists(path) and read_log(path)[-1][0] >= iters


def table(args, names):
    targets = [float(t) for t in args.targets.split(",")]
    at = [int(s) for s in args.at.split(",")]
    head = ["variant", "flags"] + [f"first step ≤ {t}" for t in targets] + [f"val @{s}" for s in at] + ["best val"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name in names:
        path = os.path.join(args.runs, name, "log.csv")
        if not os.path.exists(path):
            continue
        rows = read_log(path)
        firsts = [next((str(s) for s, v, _ in rows if v <= t), "-") for t in targets]
        vals = [next((f"{v:.3f}" for s, v, _ in rows if s == step), "") for step in at]
        best = min(v for _, v, _ in rows)
        print("| " + " | ".join([name, f"`{VARIANTS[name]}`" if VARIANTS[name] else "(defaults)"]
                                 + firsts + vals + [f"{best:.3f}"]) + " |")


def speed(args, names):
    """Tokens/s of each variant over the default's, in alternating pairs."""
    def tokens_per_s(name):
        out = os.path.join(args.runs, "speed-" + name)
        train(args.glass, out, VARIANTS[name], args.speed_iters, 1_000_000)
        return read_log(os.path.join(out, "log.csv"))[-1][2]
    for name in names:
        if name == "default":
            continue
        ratios = []
        for _ in range(args.pairs):
            base = tokens_per_s("default")
            ratios.append(tokens_per_s(name) / base)
        print(f"{name}: tokens/s ratio vs default {statistics.median(ratios):.3f} "
              f"(pairs: {', '.join(f'{r:.3f}' for r in ratios)})", flush=True)


def main():
    args = parse_args()
    for v in args.variant:
        name, _, flags = v.partition("=")
        VARIANTS[name] = flags
    names = [n for n in (args.only.split(",") if args.only else VARIANTS) if n]
    os.makedirs(args.runs, exist_ok=True)
    if args.table:
        table(args, names)
        return
    if args.speed:
        speed(args, names)
        return
    todo = [n for n in names if not done(os.path.join(args.runs, n), args.iters)]

    def one(name):
        train(args.glass, os.path.join(args.runs, name), VARIANTS[name], args.iters, args.eval_every)
        print(f"done: {name}", flush=True)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for f in [pool.submit(one, n) for n in todo]:
            try:
                f.result()
            except subprocess.CalledProcessError as e:
                print(f"failed: {e}", file=sys.stderr)
    table(args, names)


if __name__ == "__main__":
    main()
