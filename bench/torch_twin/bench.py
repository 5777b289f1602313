"""Timing benchmarks for the PyTorch twin of GlassLLM's decoder. One configuration per process (thread env vars must
be set before torch is imported). Prints one JSON line prefixed with 'RESULT '.

  /usr/bin/python3 bench/torch_twin/bench.py --torch_threads 1 --blas_threads 1 [--omp_wait PASSIVE]

--blas_threads -1 leaves OPENBLAS_NUM_THREADS unset (OpenBLAS then uses all cores).
--blas_threads defaults to --torch_threads.
--torch_threads -1 leaves torch's default (1 in this Debian build) untouched.
Measures:
  train_step  (zero_grad + forward + CE loss + backward + clip_grad_norm(1.0) + AdamW.step), pre-built
              random batches, `--warmup` untimed steps then `--steps` timed steps, for each (B, T);
              the forward / backward / clip+opt split is timed in the same steps.
  generate    200 new tokens from a 1-token prompt, greedy, under no_grad, with and without KV cache,
              `--gen_reps` timed repetitions after 1 warm-up; asserts both produce the same tokens.
"""
import argparse
import json
import os
import statistics
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--torch_threads", type=int, default=1)
p.add_argument("--blas_threads", type=int, default=None, help="default: same as --torch_threads")
p.add_argument("--omp_wait", default=None, help="OMP_WAIT_POLICY (ACTIVE/PASSIVE)")
p.add_argument("--shapes", default="12x64,8x256")
p.add_argument("--warmup", type=int, default=10)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--gen_tokens", type=int, default=200)
p.add_argument("--gen_reps", type=int, default=7)
p.add_argument("--no_gen", action="store_true")
p.add_argument("--no_train", action="store_true")
p.add_argument("--foreach", action="store_true", help="AdamW(foreach=True)")
p.add_argument("--vocab", type=int, default=65)
args = p.parse_args()
blas = args.torch_threads if args.blas_threads is None else args.blas_threads
# OMP_NUM_THREADS is deliberately not set: OpenBLAS would fall back to it when OPENBLAS_NUM_THREADS is
# unset. torch.set_num_threads() (below) sets the OpenMP thread count at run time.
if blas > 0:
    os.environ["OPENBLAS_NUM_THREADS"] = str(blas)
if args.omp_wait:
    os.environ["OMP_WAIT_POLICY"] = args.omp_wait

import torch  # noqa: E402

if args.torch_threads > 0:
    torch.set_num_threads(args.torch_threads)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model import Decoder, ModelConfig  # noqa: E402
from train import make_optimizer  # noqa: E402


def stats(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def flops_per_step(cfg, B, T):
    """6 * (matmul params) * tokens + attention score/mix matmuls (full T x T, fwd+bwd = 3x fwd)."""
    d, L, V, F, Hkv, D = cfg.d_model, cfg.n_layers, cfg.vocab_size, cfg.ffn_hidden, cfg.n_kv_heads, cfg.head_dim
    n_mm = L * (d * d + 2 * d * Hkv * D + d * d + 3 * d * F) + d * V  # W_q,W_k,W_v,W_o,W1,W3,W2 + lm_head
    dense = 6 * n_mm * B * T
    attn = 3 * L * (2 * 2 * B * cfg.n_heads * T * T * D)  # QK^T and PV, 2 flop/MAC, fwd+bwd
    return n_mm, dense, attn


res = {"torch": torch.__version__, "torch_threads": torch.get_num_threads(),
       "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
       "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS"),
       "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY"), "foreach": args.foreach}
try:
    import ctypes
    res["openblas_get_num_threads"] = ctypes.CDLL("libopenblas.so.0").openblas_get_num_threads()
except Exception as e:  # pragma: no cover
    res["openblas_get_num_threads"] = repr(e)

torch.manual_seed(0)
cfg = ModelConfig(vocab_size=args.vocab)
res["params"] = Decoder(cfg).num_params()

if not args.no_train:
    res["train"] = {}
    for shape in args.shapes.split(","):
        B, T = map(int, shape.split("x"))
        torch.manual_seed(0)
        model = Decoder(cfg)
        opt = make_optimizer(model, 1e-3, 0.1, (0.9, 0.99))
        if args.foreach:
            for g in opt.param_groups:
                g["foreach"] = True
        g = torch.Generator().manual_seed(0)
        batches = [(torch.randint(cfg.vocab_size, (B, T), generator=g),
                    torch.randint(cfg.vocab_size, (B, T), generator=g)) for _ in range(8)]
        tot, fw, bw, op = [], [], [], []
        for s in range(args.warmup + args.steps):
            x, y = batches[s % len(batches)]
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            _, loss = model(x, y)
            t1 = time.perf_counter()
            loss.backward()
            t2 = time.perf_counter()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            t3 = time.perf_counter()
            if s >= args.warmup:
                tot.append(t3 - t0); fw.append(t1 - t0); bw.append(t2 - t1); op.append(t3 - t2)
        n_mm, dense, attn = flops_per_step(cfg, B, T)
        st = stats(tot)
        res["train"][shape] = {
            "B": B, "T": T, "step_s": st, "forward_s": stats(fw), "backward_s": stats(bw),
            "clip_opt_s": stats(op), "tokens_per_s_median": B * T / st["median"],
            "matmul_params": n_mm, "flops_dense": dense, "flops_attn": attn,
            "gflops_per_s_median": (dense + attn) / st["median"] / 1e9,
            "final_loss": loss.item()}
        print(f"[{shape}] step median {st['median']*1e3:.2f} ms (min {st['min']*1e3:.2f}, max {st['max']*1e3:.2f}); "
              f"fwd {statistics.median(fw)*1e3:.2f} bwd {statistics.median(bw)*1e3:.2f} "
              f"clip+opt {statistics.median(op)*1e3:.2f}; {B*T/st['median']:.0f} tok/s; "
              f"{(dense+attn)/st['median']/1e9:.1f} GFLOP/s", flush=True)

if not args.no_gen:
    torch.manual_seed(0)
    model = Decoder(cfg).eval()
    prompt = torch.zeros((1, 1), dtype=torch.long)
    res["generate"] = {"new_tokens": args.gen_tokens}
    outs = {}
    for use_cache in (True, False):
        times = []
        for r in range(args.gen_reps + 1):
            t0 = time.perf_counter()
            out = model.generate(prompt, args.gen_tokens, use_cache=use_cache)
            dt = time.perf_counter() - t0
            if r > 0:
                times.append(dt)
        outs[use_cache] = out
        key = "kv_cache" if use_cache else "no_cache"
        st = stats(times)
        res["generate"][key] = {"total_s": st, "ms_per_token_median": st["median"] / args.gen_tokens * 1e3,
                                "tokens_per_s_median": args.gen_tokens / st["median"]}
        print(f"[gen {key}] {args.gen_tokens} tokens: median {st['median']*1e3:.1f} ms "
              f"(min {st['min']*1e3:.1f}, max {st['max']*1e3:.1f}) = {args.gen_tokens/st['median']:.0f} tok/s",
              flush=True)
    res["generate"]["same_tokens"] = bool(torch.equal(outs[True], outs[False]))

print("RESULT " + json.dumps(res))
