"""GlassLLM's decoder written in PyTorch (the "twin"): the reference for the speed comparison
(bench/compare.py) and for the reference logits of the tests (tests/nn/reference/make_reference.py).

Architecture (defaults = GlassLLM's default ModelConfig with vocab 65):
  tok_emb: Embedding(V, 128)
  4 x Block:
      x = x + Attention(RMSNorm(x))
      x = x + SwiGLU(RMSNorm(x))
  final RMSNorm
  lm_head: Linear(128, V, bias=False)   (separate weights; tie_weights=True shares tok_emb.weight)

Attention (grouped-query):
  n_heads = 4 query heads, head_dim = 32, n_kv_heads = 2
  W_q: 128->128, W_k: 128->64, W_v: 128->64, W_o: 128->128, no biases.
  Query head h uses KV head h // (n_heads // n_kv_heads)   (LLaMA `repeat_kv` / repeat_interleave
  convention: q heads 0,1 -> kv head 0; q heads 2,3 -> kv head 1).
  RoPE is applied to q and k *before* k is written to the KV cache.
  scores = q k^T / sqrt(head_dim); causal mask: masked where j > start + i (i = query row within
  the current chunk, j = absolute key position, start = number of cached positions) -> -inf;
  softmax over keys; out = P v; then W_o.

RoPE (theta = 10000):
  inv_freq[i] = theta ** (-2i / head_dim), i = 0 .. head_dim/2 - 1; angle(p, i) = p * inv_freq[i].
  rope_style="half" (HuggingFace-LLaMA "rotate_half" convention): the head vector is split
  into halves x1 = x[:D/2], x2 = x[D/2:], and pair i is (x1[i], x2[i]):
      out[:D/2] = x1 * cos - x2 * sin
      out[D/2:] = x2 * cos + x1 * sin
  Default rope_style="interleaved" is the original Meta-LLaMA (complex-number) convention: pair i is
  (x[2i], x[2i+1]). The two are the same function up to a fixed permutation of the head dims
  (i.e. of the rows of W_q / W_k), so training results are statistically identical; they differ
  only elementwise, which matters for gradient checks.

RMSNorm: y = x / sqrt(mean(x^2, -1) + eps) * g, eps = 1e-5, g initialised to 1.
SwiGLU: y = W2( silu(W1 x) * (W3 x) ), W1/W3: d->F, W2: F->d, no biases.
  F = 344 for d = 128: LLaMA's rule F = multiple_of * ceil(int(2 * 4d / 3) / multiple_of) with
  multiple_of = 8 gives int(341.33) = 341 -> 344. Params ~ 3*d*F = 132k/layer (~= a 4d GELU MLP: 131k).

Init (nanoGPT style): all Linear / Embedding weights ~ N(0, 0.02); the residual output projections
(W_o and SwiGLU W2) ~ N(0, 0.02 / sqrt(2 * n_layers)); RMSNorm gains = 1.
"""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


def llama_ffn_hidden(d_model, multiple_of=8):
    hidden = int(2 * (4 * d_model) / 3)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


@dataclass
class ModelConfig:
    vocab_size: int = 65
    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 4
    n_kv_heads: int = 2
    ffn_hidden: int = 344
    max_seq_len: int = 256        # size of the RoPE table and of the KV cache
    rope_theta: float = 10000.0
    rope_style: str = "interleaved"      # "half" (HF rotate_half) or "interleaved" (Meta complex pairs)
    norm_eps: float = 1e-5
    tie_weights: bool = False
    init_std: float = 0.02

    @property
    def head_dim(self):
        return self.d_model // self.n_heads


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(head_dim, max_seq_len, theta=10000.0, dtype=torch.float32):
    """cos, sin of shape (max_seq_len, head_dim // 2)."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    pos = torch.arange(max_seq_len, dtype=torch.float64)
    ang = torch.outer(pos, inv_freq)
    return ang.cos().to(dtype), ang.sin().to(dtype)


def apply_rope(x, cos, sin, style="half"):
    """x: (B, T, H, D); cos/sin: (T, D/2) for the absolute positions of the T rows."""
    cos = cos[None, :, None, :]
    sin = sin[None, :, None, :]
    if style == "half":
        d2 = x.shape[-1] // 2
        x1, x2 = x[..., :d2], x[..., d2:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
    elif style == "interleaved":
        x1, x2 = x[..., 0::2], x[..., 1::2]
        out = torch.stack([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
        return out.flatten(-2)
    raise ValueError(style)


class KVCache:
    """Pre-allocated per-layer cache of (post-RoPE) keys and values: (B, S_max, n_kv_heads, D)."""

    def __init__(self, cfg, batch_size, dtype=torch.float32, device=None):
        shape = (batch_size, cfg.max_seq_len, cfg.n_kv_heads, cfg.head_dim)
        self.k = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(cfg.n_layers)]
        self.v = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(cfg.n_layers)]
        self.pos = 0  # number of positions already cached


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = cfg.n_heads, cfg.n_kv_heads, cfg.head_dim
        assert cfg.n_heads % cfg.n_kv_heads == 0
        self.rope_style = cfg.rope_style
        self.wq = nn.Linear(cfg.d_model, cfg.n_heads * cfg.head_dim, bias=False)
        self.wk = nn.Linear(cfg.d_model, cfg.n_kv_heads * cfg.head_dim, bias=False)
        self.wv = nn.Linear(cfg.d_model, cfg.n_kv_heads * cfg.head_dim, bias=False)
        self.wo = nn.Linear(cfg.n_heads * cfg.head_dim, cfg.d_model, bias=False)

    def forward(self, x, cos, sin, start=0, cache=None, layer=None):
        B, T, _ = x.shape
        q = self.wq(x).view(B, T, self.n_heads, self.head_dim)
        k = self.wk(x).view(B, T, self.n_kv_heads, self.head_dim)
        v = self.wv(x).view(B, T, self.n_kv_heads, self.head_dim)
        q = apply_rope(q, cos, sin, self.rope_style)
        k = apply_rope(k, cos, sin, self.rope_style)
        if cache is not None:
            cache.k[layer][:B, start:start + T] = k
            cache.v[layer][:B, start:start + T] = v
            k = cache.k[layer][:B, :start + T]
            v = cache.v[layer][:B, :start + T]
        S = k.shape[1]
        rep = self.n_heads // self.n_kv_heads
        q = q.transpose(1, 2)                                        # (B, Hq, T, D)
        k = k.transpose(1, 2).repeat_interleave(rep, dim=1)          # (B, Hq, S, D)
        v = v.transpose(1, 2).repeat_interleave(rep, dim=1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, Hq, T, S)
        i = torch.arange(T, device=x.device)[:, None]
        j = torch.arange(S, device=x.device)[None, :]
        mask = j > (start + i)                                       # True = masked
        scores = scores.masked_fill(mask, float("-inf"))
        p = torch.softmax(scores, dim=-1)
        out = (p @ v).transpose(1, 2).reshape(B, T, self.n_heads * self.head_dim)
        return self.wo(out)


class SwiGLU(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.w1 = nn.Linear(cfg.d_model, cfg.ffn_hidden, bias=False)  # gate
        self.w3 = nn.Linear(cfg.d_model, cfg.ffn_hidden, bias=False)  # up
        self.w2 = nn.Linear(cfg.ffn_hidden, cfg.d_model, bias=False)  # down

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.attn = Attention(cfg)
        self.ffn_norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.ffn = SwiGLU(cfg)

    def forward(self, x, cos, sin, start=0, cache=None, layer=None):
        x = x + self.attn(self.attn_norm(x), cos, sin, start, cache, layer)
        x = x + self.ffn(self.ffn_norm(x))
        return x


class Decoder(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.layers = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layers)])
        self.norm = RMSNorm(cfg.d_model, cfg.norm_eps)
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        if cfg.tie_weights:
            self.lm_head.weight = self.tok_emb.weight
        cos, sin = rope_tables(cfg.head_dim, cfg.max_seq_len, cfg.rope_theta)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.apply(self._init_weights)
        resid_std = cfg.init_std / math.sqrt(2 * cfg.n_layers)
        for layer in self.layers:
            nn.init.normal_(layer.attn.wo.weight, mean=0.0, std=resid_std)
            nn.init.normal_(layer.ffn.w2.weight, mean=0.0, std=resid_std)

    def _init_weights(self, m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=self.cfg.init_std)

    def num_params(self):
        return sum(p.numel() for p in self.parameters())  # parameters() de-duplicates tied weights

    def forward(self, idx, targets=None, cache=None, return_hidden=False):
        """idx: (B, T) int64. With a cache, idx holds only the new tokens, at positions
        cache.pos .. cache.pos+T-1, and cache.pos is advanced by T."""
        B, T = idx.shape
        start = cache.pos if cache is not None else 0
        assert start + T <= self.cfg.max_seq_len
        cos = self.rope_cos[start:start + T].to(self.tok_emb.weight.dtype)
        sin = self.rope_sin[start:start + T].to(self.tok_emb.weight.dtype)
        x = self.tok_emb(idx)
        hidden = []
        for li, layer in enumerate(self.layers):
            x = layer(x, cos, sin, start, cache, li)
            hidden.append(x)
        x = self.norm(x)
        logits = self.lm_head(x)
        if cache is not None:
            cache.pos += T
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        if return_hidden:
            return logits, loss, hidden
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, use_cache=True, temperature=0.0, generator=None):
        """Greedy (temperature=0) or sampled generation. Without a cache the whole (cropped)
        sequence is re-run each step."""
        cache = KVCache(self.cfg, idx.shape[0], self.tok_emb.weight.dtype) if use_cache else None
        out = idx
        nxt_in = idx
        for _ in range(max_new_tokens):
            if use_cache:
                logits, _ = self(nxt_in, cache=cache)
            else:
                logits, _ = self(out[:, -self.cfg.max_seq_len:])
            logits = logits[:, -1, :]
            if temperature == 0.0:
                nxt = logits.argmax(-1, keepdim=True)
            else:
                probs = torch.softmax(logits / temperature, dim=-1)
                nxt = torch.multinomial(probs, 1, generator=generator)
            out = torch.cat([out, nxt], dim=1)
            nxt_in = nxt
        return out
