#!/usr/bin/env python3
"""The speedrun table: how good a model a machine learns in 1, 3 and 10 minutes.

For each corpus, recipe and seed, runs `glass train --time B` for every budget B (each budget is
its own run: a 1-minute run has its own schedule, fitted to one minute) and reads the run's
log.csv. It prints, per corpus and recipe, the mean over the seeds (and min-max) of:

- the time to reach each target validation loss (default 1.88 and 1.60 nats per token), read
  from the longest budget's run: the `elapsed_s` of its first evaluation at or below the target
  (wall time of the run's loop, evaluations included; `-` when never reached). The clock starts
  after `--time`'s timed trial (about 2% of the budget, at most 2 s), which the figures leave out;
- the final validation loss of each budget's run, and the same in bits per byte of text
  (loss / ln 2 x tokens / bytes of the validation split, as `glass train`'s summary prints it),
  the number that compares tokenizers.

The table names the machine (CPU model, family/model), the OpenBLAS core (`glass --version`)
and the machine's sgemm limit at the thread count (`bench_train_step --no_train --no_gen`).

  python3 bench/speedrun.py [--build build] [--corpus tinyshakespeare,domcasmurro]
                            [--seeds 1,2,3] [--budgets 1m,3m,10m] [--threads 2]
                            [--recipe NAME='FLAGS' ...] [--targets 1.88,1.60]
                            [--markdown table.md] [--json out.json]

A recipe is a name and the `glass train` flags that define it; the default recipe is
`glass train --time`'s own (`default=''`): the speedrun recipe, `--optimizer muon --zero-init-out`,
unless the flags name the optimizer (`adamw='--optimizer adamw'` is AdamW's). Runs go to a
temporary directory, deleted at the end. Every run costs its budget plus start-up and the final
evaluation: the defaults take 3 seeds x 2 corpora x 14 minutes = about 1.5 hours per recipe. Run it on a quiet machine
(`uptime` load well below the core count): the script prints the load before and after.
"""
import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CORPORA = os.path.join(ROOT, "data", "corpora")


def duration_s(text):
    """'90s', '5m', '1.5m', '1h' -> seconds (the spelling `glass train --time` takes)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([smh])", text.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"a budget is a number and a unit (s, m or h), got {text!r}")
    return float(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[m.group(2)]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"), help="GlassLLM build directory")
    p.add_argument("--corpus", default="tinyshakespeare,domcasmurro",
                   help="comma-separated names in data/corpora/ or paths to UTF-8 text files")
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--budgets", default="1m,3m,10m", help="comma-separated durations of --time")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--targets", default="1.88,1.60", help="validation losses to time")
    p.add_argument("--recipe", action="append", default=[],
                   help="NAME='glass train flags' (repeatable); default: default=''")
    p.add_argument("--markdown", default=None, help="also write the table to this file")
    p.add_argument("--json", default=None, help="write every run's raw numbers to this file")
    a = p.parse_args()
    a.glass = os.path.join(a.build, "glass")
    if not os.access(a.glass, os.X_OK):
        p.error(f"no glass in {a.build}: build it first (cmake --build {a.build} --target glass bench_train_step)")
    a.corpora = []
    for c in a.corpus.split(","):
        path = c if os.path.isfile(c) else os.path.join(CORPORA, c + ".txt")
        if not os.path.isfile(path):
            p.error(f"no corpus {c!r} (a name in data/corpora/ or a file)")
        a.corpora.append((os.path.splitext(os.path.basename(path))[0], path))
    try:
        a.seed_list = [int(s) for s in a.seeds.split(",")]
        a.target_list = [float(t) for t in a.targets.split(",")]
        a.budget_list = [(b, duration_s(b)) for b in a.budgets.split(",")]
    except (ValueError, argparse.ArgumentTypeError) as e:
        p.error(str(e))
    a.budget_list.sort(key=lambda b: b[1])
    a.recipes = []
    for r in a.recipe or ["default="]:
        name, sep, flags = r.partition("=")
        if not sep or not name:
            p.error(f"--recipe takes NAME='FLAGS', got {r!r}")
        a.recipes.append((name, flags.split()))
    return a


def machine():
    """CPU model name with family/model, from /proc/cpuinfo."""
    info = {}
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            info.setdefault(key.strip(), value.strip())
    return f"{info.get('model name', '?')} (family {info.get('cpu family', '?')}, model {info.get('model', '?')})"


def blas_core(glass):
    out = subprocess.run([glass, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"core (\S+)", out)
    return m.group(1) if m else "?"


def sgemm_peak(build, threads):
    bench = os.path.join(build, "bench", "bench_train_step")
    if not os.access(bench, os.X_OK):
        return None
    out = subprocess.run([bench, "--threads", str(threads), "--no_train", "--no_gen"],
                         capture_output=True, text=True).stdout
    m = re.search(r"\[sgemm[^\]]*\] ([\d.]+) GFLOP/s", out)
    return float(m.group(1)) if m else None


def load():
    return os.getloadavg()[0]


def read_log(run_dir):
    """(step, val_loss, elapsed_s) of every evaluation in the run's newest log.csv."""
    path = os.path.join(run_dir, "current", "log.csv")
    rows = []
    with open(path) as f:
        header = f.readline().strip().split(",")
        for line in f:
            cells = dict(zip(header, line.strip().split(",")))
            rows.append((int(cells["step"]), float(cells["val_loss"]), float(cells["elapsed_s"])))
    return rows


BPB = re.compile(r"val ([\d.]+) bits per byte \(([\d,]+) \w+ over ([\d,]+) bytes")


def train(a, corpus, flags, seed, budget, work):
    out = os.path.join(work, "run")
    shutil.rmtree(out, ignore_errors=True)
    cmd = [a.glass, "train", "--data", corpus, "--out", out, "--seed", str(seed), "--time", budget,
           "-t", str(a.threads)] + flags
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"speedrun: {' '.join(cmd)} failed:\n{proc.stderr}{proc.stdout[-2000:]}")
    rows = read_log(out)
    m = BPB.search(proc.stdout)
    tokens_per_byte = None
    if m:
        tokens_per_byte = int(m.group(2).replace(",", "")) / int(m.group(3).replace(",", ""))
    return {"rows": rows, "tokens_per_byte": tokens_per_byte}


def summary(values, fmt):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    mean = statistics.fmean(values)
    if len(values) == 1:
        return fmt.format(mean)
    return f"{fmt.format(mean)} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def main():
    a = parse_args()
    print(f"machine: {machine()}; OpenBLAS core {blas_core(a.glass)}; load {load():.2f}", file=sys.stderr)
    peak = sgemm_peak(a.build, a.threads)
    runs = []
    work = tempfile.mkdtemp(prefix="glass-speedrun-")
    try:
        for corpus_name, corpus in a.corpora:
            for recipe, flags in a.recipes:
                for seed in a.seed_list:
                    for budget, seconds in a.budget_list:
                        print(f"{corpus_name} {recipe} seed {seed} --time {budget} ...", file=sys.stderr)
                        r = train(a, corpus, flags, seed, budget, work)
                        runs.append({"corpus": corpus_name, "recipe": recipe, "flags": flags, "seed": seed,
                                     "budget": budget, "budget_s": seconds, **r})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    lines = table(a, runs, peak)
    text = "\n".join(lines) + "\n"
    print(text)
    print(f"load after: {load():.2f}", file=sys.stderr)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"machine": machine(), "sgemm_gflops": peak, "runs": runs}, f, indent=1)


def table(a, runs, peak):
    peak_text = f"{peak:.0f} GFLOP/s" if peak else "not measured"
    lines = [f"Machine: {machine()}, OpenBLAS core {blas_core(a.glass)}, {a.threads} thread(s), "
             f"sgemm limit {peak_text}; mean over seeds {a.seeds} (min–max).", ""]
    head = ["corpus", "recipe"] + [f"time to {t:.2f}" for t in a.target_list]
    head += [f"val at {b}" for b, _ in a.budget_list] + [f"bits/byte at {b}" for b, _ in a.budget_list]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    longest = a.budget_list[-1][0]
    for corpus_name, _ in a.corpora:
        for recipe, flags in a.recipes:
            mine = [r for r in runs if r["corpus"] == corpus_name and r["recipe"] == recipe]
            cells = [corpus_name, f"{recipe} `{' '.join(flags)}`" if flags else recipe]
            for target in a.target_list:
                times = []
                for r in mine:
                    if r["budget"] != longest:
                        continue
                    hit = next((e for _, v, e in r["rows"] if v <= target), None)
                    times.append(hit)
                reached = [t for t in times if t is not None]
                cell = summary(reached, "{:.0f} s")
                if len(reached) < len(times):
                    cell += f" ({len(times) - len(reached)} of {len(times)} never)"
                cells.append(cell)
            finals = {b: [r for r in mine if r["budget"] == b] for b, _ in a.budget_list}
            for b, _ in a.budget_list:
                cells.append(summary([r["rows"][-1][1] for r in finals[b] if r["rows"]], "{:.3f}"))
            for b, _ in a.budget_list:
                cells.append(summary([r["rows"][-1][1] / math.log(2) * r["tokens_per_byte"]
                                      for r in finals[b] if r["rows"] and r["tokens_per_byte"]], "{:.3f}"))
            lines.append("| " + " | ".join(cells) + " |")
    return lines


if __name__ == "__main__":
    main()
