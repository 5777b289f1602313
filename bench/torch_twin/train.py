"""Train the PyTorch twin of GlassLLM's decoder on a character-level text file (nanoGPT's
shakespeare_char CPU recipe, with GlassLLM's architecture; default: data/corpora/tinyshakespeare.txt).

Recipe: vocab = sorted(set(text)); first 90% of the encoded text = train, last 10% = val;
random windows (x = data[i:i+T], y = data[i+1:i+T+1], i ~ U[0, len-T)); batch 12, block 64;
AdamW lr 1e-3, betas (0.9, 0.99), eps 1e-8, weight decay 0.1 on 2-D weights (all Linear weights
and the embedding), 0 on RMSNorm gains; lr: linear warmup lr*(it+1)/(warmup+1) for it < 100, then
cosine from lr to min_lr = lr/10 at it = max_iters; grad-norm clip 1.0; 2000 optimizer steps.
Every 250 steps (and at step 0 and after the last step) the train and val losses are estimated as
the mean over 20 batches (eval batches come from their own generator, re-seeded at every eval, so
every eval uses the same 20 val windows and the same 20 train windows).

Usage: /usr/bin/python3 bench/torch_twin/train.py [--threads N] [--data PATH] [--max_iters 2000] ...
Thread setting: --threads -> torch.set_num_threads; --blas_threads ->
OPENBLAS_NUM_THREADS (set before torch is imported). torch.set_num_threads alone does NOT limit the
OpenBLAS (pthreads) GEMM threads in this Debian build; unset, OpenBLAS uses all cores.
Defaults (--threads 1, OpenBLAS unset) were the fastest setting on a 2-core machine (bench/README.md).
"""
import argparse
import json
import math
import os
import sys
import time


def parse_args(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--data", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data",
                                                "corpora", "tinyshakespeare.txt"))
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    p.add_argument("--blas_threads", type=int, default=-1,
                   help="OPENBLAS_NUM_THREADS; -1 = leave unset (OpenBLAS then uses all cores)")
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--batch_size", type=int, default=12)
    p.add_argument("--block_size", type=int, default=64)
    p.add_argument("--max_iters", type=int, default=2000)
    p.add_argument("--eval_interval", type=int, default=250)
    p.add_argument("--eval_iters", type=int, default=20)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--min_lr", type=float, default=None, help="default lr/10")
    p.add_argument("--warmup_iters", type=int, default=100)
    p.add_argument("--weight_decay", type=float, default=0.1)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.99)
    p.add_argument("--grad_clip", type=float, default=1.0)
    p.add_argument("--tie_weights", action="store_true")
    p.add_argument("--rope_style", default="interleaved", choices=["half", "interleaved"])
    p.add_argument("--out_json", default=None, help="write the loss log here")
    p.add_argument("--ckpt", default=None, help="save the final state_dict here")
    p.add_argument("--sample_tokens", type=int, default=200)
    return p.parse_args(argv)


def set_threads_env(blas=-1):
    """Must run before `import torch`. OMP_NUM_THREADS is deliberately NOT set: OpenBLAS falls back
    to it when OPENBLAS_NUM_THREADS is unset, which would silently change the BLAS thread count."""
    if blas > 0:
        os.environ["OPENBLAS_NUM_THREADS"] = str(blas)


def load_char_data(path):
    import torch
    with open(path, "r", encoding="utf-8") as f:
        text = f.read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    n = int(0.9 * len(data))
    return data[:n], data[n:], chars


def get_batch(data, batch_size, block_size, generator):
    import torch
    ix = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    x = torch.stack([data[i:i + block_size] for i in ix.tolist()])
    y = torch.stack([data[i + 1:i + 1 + block_size] for i in ix.tolist()])
    return x, y


def get_lr(it, lr, min_lr, warmup_iters, max_iters):
    if it < warmup_iters:
        return lr * (it + 1) / (warmup_iters + 1)
    if it >= max_iters:
        return min_lr
    ratio = (it - warmup_iters) / (max_iters - warmup_iters)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - min_lr)


def make_optimizer(model, lr, weight_decay, betas):
    import torch
    params = [p for p in model.parameters() if p.requires_grad]  # de-duplicated (tying-safe)
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=1e-8)


def main(argv=None):
    args = parse_args(argv)
    set_threads_env(args.blas_threads)
    import torch
    torch.set_num_threads(args.threads)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from model import Decoder, ModelConfig

    torch.manual_seed(args.seed)
    train_data, val_data, chars = load_char_data(args.data)
    V = len(chars)
    cfg = ModelConfig(vocab_size=V, tie_weights=args.tie_weights, rope_style=args.rope_style)
    model = Decoder(cfg)
    min_lr = args.min_lr if args.min_lr is not None else args.lr / 10
    opt = make_optimizer(model, args.lr, args.weight_decay, (args.beta1, args.beta2))
    gen_train = torch.Generator().manual_seed(args.seed + 1)

    try:
        import ctypes
        nblas = ctypes.CDLL("libopenblas.so.0").openblas_get_num_threads()
    except Exception:
        nblas = "?"
    print(f"torch {torch.__version__}  threads torch={torch.get_num_threads()} openblas={nblas} "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')} (unset = all cores)")
    print(f"vocab {V}  train tokens {len(train_data)}  val tokens {len(val_data)}  "
          f"params {model.num_params()}  cfg {cfg}")

    @torch.no_grad()
    def estimate_loss():
        model.eval()
        out = {}
        g = torch.Generator().manual_seed(args.seed + 2)
        for split, data in (("train", train_data), ("val", val_data)):
            losses = []
            for _ in range(args.eval_iters):
                x, y = get_batch(data, args.batch_size, args.block_size, g)
                _, loss = model(x, y)
                losses.append(loss.item())
            out[split] = sum(losses) / len(losses)
        model.train()
        return out

    log = []
    t0 = time.perf_counter()
    eval_time = 0.0
    last_loss = float("nan")
    for it in range(args.max_iters + 1):
        if it % args.eval_interval == 0 or it == args.max_iters:
            te = time.perf_counter()
            losses = estimate_loss()
            eval_time += time.perf_counter() - te
            wall = time.perf_counter() - t0
            rec = {"iter": it, "train": losses["train"], "val": losses["val"],
                   "batch_loss": last_loss, "wall_s": wall, "train_wall_s": wall - eval_time,
                   "lr": get_lr(it, args.lr, min_lr, args.warmup_iters, args.max_iters)}
            log.append(rec)
            print(f"iter {it:5d}  train {losses['train']:.4f}  val {losses['val']:.4f}  "
                  f"last batch {last_loss:.4f}  wall {wall:7.1f}s (train-only {wall - eval_time:7.1f}s)",
                  flush=True)
        if it == args.max_iters:
            break
        lr = get_lr(it, args.lr, min_lr, args.warmup_iters, args.max_iters)
        for g_ in opt.param_groups:
            g_["lr"] = lr
        x, y = get_batch(train_data, args.batch_size, args.block_size, gen_train)
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if args.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        opt.step()
        last_loss = loss.item()

    total = time.perf_counter() - t0
    print(f"done: {args.max_iters} iters, total wall {total:.1f}s, eval {eval_time:.1f}s, "
          f"train-only {total - eval_time:.1f}s "
          f"({(total - eval_time) / args.max_iters * 1000:.2f} ms/iter incl. data+clip+opt)")

    sample = ""
    if args.sample_tokens > 0:
        g = torch.Generator().manual_seed(args.seed)
        start = torch.tensor([[chars.index("\n")]], dtype=torch.long)
        model.eval()
        out = model.generate(start, args.sample_tokens, use_cache=True, temperature=0.8, generator=g)
        sample = "".join(chars[i] for i in out[0].tolist())
        print("---- sample (temperature 0.8, KV cache) ----")
        print(sample)
        print("----")
    if args.out_json:
        with open(args.out_json, "w") as f:
            json.dump({"args": vars(args), "params": model.num_params(), "log": log,
                       "total_wall_s": total, "eval_wall_s": eval_time, "sample": sample,
                       "torch": torch.__version__}, f, indent=1)
    if args.ckpt:
        torch.save({"cfg": cfg.__dict__, "chars": chars, "state_dict": model.state_dict()}, args.ckpt)


if __name__ == "__main__":
    main()
