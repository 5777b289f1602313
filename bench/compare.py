#!/usr/bin/env python3
"""Side-by-side speed comparison of GlassLLM and its PyTorch twin (bench/torch_twin/).

Runs GlassLLM's `bench_train_step` and the twin's `bench.py` back to back, alternating
(glass, twin, glass, twin, ...), `--reps` times for every thread count, and prints a table of
the medians over repetitions (each repetition's number is itself the median over its steps),
the min-max over repetitions, and the ratios. Per thread count: both training shapes' step
medians and their ratio to the twin, the machine's large-sgemm rate at that thread count and
each step against it (step time / (step FLOPs / sgemm rate): 1.0x = every FLOP at sgemm speed),
generation of 200 tokens (both programs) and of 2,000 tokens past a 64-token window (GlassLLM's
rolling KV cache; the twin has none); then the N-vs-1-thread speed-up of both programs' steps.
Optionally (--recipe) also runs the 2000-step
tinyshakespeare recipe with both programs (`glass train` vs the twin's train.py) and compares
wall time and final val loss.

  python3 bench/compare.py [--build build] [--reps 3] [--threads 1,2] [--recipe]
                           [--markdown table.md] [--json out.json]

Threads: GlassLLM gets `--threads N`; the twin gets `--torch_threads 1 --blas_threads N`
(OPENBLAS_NUM_THREADS=N set before torch starts), its best setting: with torch's own pool at N
too, the two pools fight over the cores.
The machine may be shared: numbers are only comparable within one run of this script.
Needs Debian's python3-torch for the twin (run with /usr/bin/python3); no other packages.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TWIN_DEFAULT = os.path.join(HERE, "torch_twin")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"), help="GlassLLM build directory")
    p.add_argument("--twin", default=TWIN_DEFAULT, help="directory of the twin's bench.py/train.py")
    p.add_argument("--python", default="/usr/bin/python3", help="python with torch, for the twin")
    p.add_argument("--reps", type=int, default=3, help="repetitions of each program per thread count")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--gen_reps", type=int, default=7)
    p.add_argument("--long_tokens", type=int, default=2000,
                   help="GlassLLM's long generation (window 64, rolling KV cache)")
    p.add_argument("--long_reps", type=int, default=3)
    p.add_argument("--no_bench", action="store_true", help="skip the step/generation benchmark")
    p.add_argument("--recipe", action="store_true", help="also run the 2000-step recipe for both")
    p.add_argument("--recipe_iters", type=int, default=2000)
    p.add_argument("--recipe_threads", type=int, default=1,
                   help="OpenBLAS threads for the recipe runs (both programs)")
    p.add_argument("--data", default=os.path.join(ROOT, "data", "corpora", "tinyshakespeare.txt"))
    p.add_argument("--markdown", default=None, help="also write the table(s) to this file")
    p.add_argument("--json", default=None, help="write every raw result to this file")
    a = p.parse_args()
    if not os.path.isfile(os.path.join(a.twin, "bench.py")):
        p.error(f"the PyTorch twin is not in {a.twin} (its place is bench/torch_twin); pass --twin DIR")
    if a.reps < 1:
        p.error("--reps must be >= 1")
    try:
        a.thread_list = [int(t) for t in a.threads.split(",")]
    except ValueError:
        p.error(f"--threads must be comma-separated integers, got {a.threads!r}")
    if any(t < 1 for t in a.thread_list):
        p.error("--threads must be >= 1")
    return a


def run(cmd, env=None, cwd=None):
    """Runs cmd, echoes its human lines to stderr, returns (stdout, wall seconds)."""
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout)
        raise SystemExit(f"compare.py: {' '.join(cmd)} failed with exit code {proc.returncode}")
    return proc.stdout, wall


def result_json(out, what):
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise SystemExit(f"compare.py: no 'RESULT ' line in the output of {what}:\n{out}")


def glass_bench(a, threads):
    exe = os.path.join(a.build, "bench", "bench_train_step")
    if not os.path.exists(exe):
        raise SystemExit(f"compare.py: {exe} not found (build the 'bench_train_step' target)")
    cmd = [exe, "--threads", str(threads), "--warmup", str(a.warmup), "--steps", str(a.steps),
           "--gen_reps", str(a.gen_reps), "--long_tokens", str(a.long_tokens), "--long_reps",
           str(a.long_reps)]
    out, _ = run(cmd)
    return result_json(out, "bench_train_step")


def twin_bench(a, threads):
    # The twin at its best setting for N threads: torch's own pool at 1 thread, OpenBLAS at N
    # (as its train.py recipe runs). With torch's OpenMP pool also at N, the two pools fight over
    # the cores and the twin gets several times slower at 2 threads.
    cmd = [a.python, os.path.join(a.twin, "bench.py"), "--torch_threads", "1",
           "--blas_threads", str(threads), "--warmup", str(a.warmup), "--steps", str(a.steps),
           "--gen_reps", str(a.gen_reps)]
    out, _ = run(cmd)
    return result_json(out, "bench.py")


# What the table shows: (label, getter, unit, lower_is_better); a getter returns None when the
# program does not measure it (the twin has no rolling KV cache for 2,000 tokens).
METRICS = [
    ("train step 12x64", lambda r: r["train"]["12x64"]["step_s"]["median"] * 1e3, "ms", True),
    ("train step 8x256", lambda r: r["train"]["8x256"]["step_s"]["median"] * 1e3, "ms", True),
    ("generate 200, KV cache", lambda r: r["generate"]["kv_cache"]["tokens_per_s_median"], "tok/s", False),
    ("generate 200, no cache", lambda r: r["generate"]["no_cache"]["tokens_per_s_median"], "tok/s", False),
    ("generate 2000, window 64, rolling KV cache",
     lambda r: r.get("long_generate", {}).get("rolling", {}).get("tokens_per_s_median"), "tok/s", False),
]

def summary(values):
    return statistics.median(values), min(values), max(values)


def fmt(v):
    return f"{v:.1f}" if v < 100 else f"{v:.0f}"


def load_avg():
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def bench_table(a, raw):
    lines = ["| threads | what | GlassLLM median (min–max) | twin median (min–max) | GlassLLM / twin | target | met |",
             "|---|---|---|---|---|---|---|"]
    for threads in a.thread_list:
        runs = raw[str(threads)]
        for label, get, unit, lower in METRICS:
            gv = [get(r) for r in runs["glass"]]
            tv = [get(r) for r in runs["twin"]]
            if any(v is None for v in gv):
                continue
            g = summary(gv)
            t = summary(tv) if all(v is not None for v in tv) else None
            ratio = g[0] / t[0] if t else None
            if label.startswith("generate 2000") and threads == 1:
                target, met = "≥ 5000 tok/s", g[0] >= 5000
            elif label.startswith("train step") and threads == 1 and ratio is not None:
                target, met = "≤ 0.5x", ratio <= 0.5
            elif label.startswith("generate 200, KV") and ratio is not None:
                target, met = "≥ 10x", ratio >= 10
            else:
                target, met = "", None
            twin_cell = f"{fmt(t[0])} ({fmt(t[1])}–{fmt(t[2])})" if t else "(not measured)"
            ratio_cell = f"{ratio:.2f}x" if ratio is not None else ""
            lines.append(f"| {threads} | {label} ({unit}) | {fmt(g[0])} ({fmt(g[1])}–{fmt(g[2])}) | "
                         f"{twin_cell} | {ratio_cell} | {target} | "
                         f"{'' if met is None else ('yes' if met else 'no')} |")
        # The machine's limit at this thread count: a large sgemm, and each step against it.
        peaks = [r["sgemm"]["gflops"] for r in runs["glass"] if "sgemm" in r]
        if peaks:
            p = summary(peaks)
            blas = runs["glass"][0].get("blas", "OpenBLAS")  # "OpenBLAS 0.3.21, core Haswell"
            lines.append(f"| {threads} | {blas}: sgemm n={runs['glass'][0]['sgemm']['n']} (GFLOP/s) | "
                         f"{fmt(p[0])} ({fmt(p[1])}–{fmt(p[2])}) | | | | |")
            for shape in ("12x64", "8x256"):
                # step median / (FLOPs / this run's sgemm rate), per repetition
                xs = summary([r["train"][shape]["times_limit"] for r in runs["glass"]])
                gf = statistics.median(r["train"][shape]["flops"] for r in runs["glass"]) / 1e9
                if threads == 1 and shape == "12x64":
                    target, met = "≤ 1.1x", xs[0] <= 1.1
                else:
                    target, met = "", None
                lines.append(f"| {threads} | GlassLLM step {shape} / sgemm limit ({gf:.2f} GFLOP at the sgemm rate) | "
                             f"{xs[0]:.2f}x ({xs[1]:.2f}–{xs[2]:.2f}) | | | {target} | "
                             f"{'' if met is None else ('yes' if met else 'no')} |")
    # N threads against 1, GlassLLM's own step time
    if 1 in a.thread_list and len(a.thread_list) > 1:
        for shape in ("12x64", "8x256"):
            one = statistics.median(r["train"][shape]["step_s"]["median"] for r in raw["1"]["glass"]) * 1e3
            for threads in a.thread_list:
                if threads == 1:
                    continue
                many = statistics.median(r["train"][shape]["step_s"]["median"] for r in raw[str(threads)]["glass"]) * 1e3
                twin_one = statistics.median(r["train"][shape]["step_s"]["median"] for r in raw["1"]["twin"]) * 1e3
                twin_many = statistics.median(r["train"][shape]["step_s"]["median"] for r in raw[str(threads)]["twin"]) * 1e3
                speedup = one / many
                target = f"≥ {0.9 * threads:.1f}x"
                lines.append(f"| {threads} vs 1 | step {shape} speed-up (ms) | {speedup:.2f}x ({fmt(many)} vs {fmt(one)}) | "
                             f"{twin_one / twin_many:.2f}x ({fmt(twin_many)} vs {fmt(twin_one)}) | | {target} | "
                             f"{'yes' if speedup >= 0.9 * threads else 'no'} |")
    # memory of the 12x64 run (GlassLLM; the bench runs 12x64 first, so the peak is that run's)
    mem = [r["train"]["12x64"] for t in a.thread_list for r in raw[str(t)]["glass"]]
    peak = max(m["peak_rss_mb"] for m in mem)
    growth = max(m["rss_growth_mb"] for m in mem)
    lines.append(f"| all | GlassLLM peak RSS 12x64 (MB) | {peak:.1f} (largest of {len(mem)} runs) | | | ≤ 150 | "
                 f"{'yes' if peak <= 150 else 'no'} |")
    # A tape that is not freed would add the whole step's activations (tens of MB at 12x64) at
    # every step; a few MB once is the allocator settling (tcmalloc's caches), flat in longer runs.
    lines.append(f"| all | GlassLLM RSS growth over {a.steps} steps after warm-up (MB) | {growth:.1f} (largest) | | | < 5 | "
                 f"{'yes' if growth < 5 else 'no'} |")
    return lines


def last_val_loss(text, pattern):
    matches = re.findall(pattern, text)
    if not matches:
        raise SystemExit(f"compare.py: could not find the final val loss in:\n{text[-2000:]}")
    return float(matches[-1])


def recipe(a):
    glass_exe = os.path.join(a.build, "glass")
    if not os.path.exists(glass_exe):
        raise SystemExit(f"compare.py: {glass_exe} not found (build the 'glass' target)")
    out_dir = tempfile.mkdtemp(prefix="glass-recipe-")
    try:
        n = str(a.recipe_threads)
        gcmd = [glass_exe, "train", "--data", a.data, "--iters", str(a.recipe_iters), "--out",
                os.path.join(out_dir, "run"), "--threads", n]
        sys.stderr.write(f"[recipe] {' '.join(gcmd)}\n")
        gout, gwall = run(gcmd)
        tcmd = [a.python, os.path.join(a.twin, "train.py"), "--data", a.data, "--max_iters",
                str(a.recipe_iters), "--threads", "1", "--blas_threads", n]
        sys.stderr.write(f"[recipe] {' '.join(tcmd)}\n")
        tout, twall = run(tcmd)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    gval = last_val_loss(gout, r"val loss ([0-9.]+)")
    tval = last_val_loss(tout, r"train [0-9.]+\s+val ([0-9.]+)")  # "iter 2000  train 1.51  val 1.70"
    ratio = gwall / twall
    met = ratio <= 0.5 and abs(gval - tval) <= 0.03
    lines = ["| recipe (threads) | GlassLLM wall (val loss) | twin wall (val loss) | wall ratio | val loss difference | target | met |",
             "|---|---|---|---|---|---|---|",
             f"| {a.recipe_iters} steps tinyshakespeare ({a.recipe_threads}) | {gwall:.1f} s ({gval:.4f}) | "
             f"{twall:.1f} s ({tval:.4f}) | {ratio:.2f}x | {gval - tval:+.4f} | ≤ 0.5x, ±0.03 | "
             f"{'yes' if met else 'no'} |"]
    return lines, {"glass_wall_s": gwall, "glass_val": gval, "twin_wall_s": twall, "twin_val": tval,
                   "glass_output_tail": gout[-3000:], "twin_output_tail": tout[-3000:]}


def main():
    a = parse_args()
    raw = {"load_before": load_avg()}
    tables = []
    if not a.no_bench:
        for threads in a.thread_list:
            raw[str(threads)] = {"glass": [], "twin": []}
            for rep in range(a.reps):
                # alternate which program goes first, so drifting load hits both alike
                order = ("glass", "twin") if rep % 2 == 0 else ("twin", "glass")
                for who in order:
                    sys.stderr.write(f"[threads {threads}, rep {rep + 1}/{a.reps}] {who} (load {load_avg():.1f})\n")
                    res = glass_bench(a, threads) if who == "glass" else twin_bench(a, threads)
                    raw[str(threads)][who].append(res)
        tables.append("\n".join(bench_table(a, raw)))
    if a.recipe:
        lines, raw["recipe"] = recipe(a)
        tables.append("\n".join(lines))
    raw["load_after"] = load_avg()
    note = (f"{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, load average "
            f"{raw['load_before']:.1f} before / {raw['load_after']:.1f} after")
    if not a.no_bench:
        note += (f"; {a.reps} repetitions per program and thread count, alternating; each repetition = "
                 f"median of {a.steps} steps after {a.warmup} warm-up steps, generation = median of "
                 f"{a.gen_reps} runs")
    if a.recipe:
        note += f"; recipe: one run of each program, {a.recipe_threads} thread(s)"
    note += "."
    text = "\n\n".join(tables) + "\n\n" + note + "\n"
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(raw, f, indent=1)


if __name__ == "__main__":
    main()
