#!/usr/bin/python3
"""PyTorch's side of `dew bench train`: trains the architecture of a Dew config.json (gpt2, the
llama family, mamba2 or qwen3_next, as Dew computes them) with the same batch, objective, optimizer and clipping as
Dew's train_step: next-token cross-entropy over (B, T) random ids, AdamW (betas 0.9/0.95, weight
decay 0.1 on matrices but the embeddings), global-norm clipping at 1.0, f32. Written as PyTorch is
used at its best on a CPU (docs/perf.md, "Training against PyTorch"): nn.Linear (one addmm with the bias), q, k and v
in one product and the gate and up projections in another, fused F.layer_norm and F.gelu, foreach
AdamW; `dew bench train` runs it with jemalloc preloaded and
OMP_WAIT_POLICY=PASSIVE. torch 1.13 has no scaled_dot_product_attention: attention is the matmul,
masked softmax, matmul of nanoGPT's non-flash path.

With PRECISION bf16, forward and loss run under torch.autocast("cpu", dtype=torch.bfloat16): bf16
matmul operands and activations, f32 master weights and optimizer state (Dew's mixed precision).

Usage: train_pytorch.py CONFIG_JSON B T STEPS THREADS [PRECISION [profile]]. Prints one JSON line: the
seconds of each step after one warm-up step, and the process's peak resident bytes; with "profile", also
one more step under torch.profiler, its time sorted into the kinds of Dew's StepProfile (train.h).
"""
import contextlib
import json
import math
import re
import resource
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


class CausalSelfAttention(nn.Module):
    def __init__(self, c, bias):
        super().__init__()
        self.H = c["heads"]
        self.KV = c["kv_heads"]
        self.D = c["head_dim"]
        C = c["hidden"]
        self.qkv = nn.Linear(C, (self.H + 2 * self.KV) * self.D, bias=bias)  # one product for q, k and v
        self.o = nn.Linear(self.H * self.D, C, bias=bias)

    def forward(self, x, mask, rope):
        B, T, _ = x.shape
        q, k, v = self.qkv(x).split([self.H * self.D, self.KV * self.D, self.KV * self.D], dim=-1)
        q = q.view(B, T, self.H, self.D).transpose(1, 2)
        k = k.view(B, T, self.KV, self.D).transpose(1, 2)
        v = v.view(B, T, self.KV, self.D).transpose(1, 2)
        if rope is not None:
            cos, sin = rope
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        if self.KV != self.H:
            k = k.repeat_interleave(self.H // self.KV, dim=1)
            v = v.repeat_interleave(self.H // self.KV, dim=1)
        scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(self.D))
        attended = scores.masked_fill(mask, float("-inf")).softmax(-1) @ v
        return self.o(attended.transpose(1, 2).reshape(B, T, self.H * self.D))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class RMSNorm(nn.Module):
    def __init__(self, C, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(C))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


class SparseMoe(nn.Module):
    """transformers' sparse MoE block as it is written for speed in PyTorch: the router (softmax in f32,
    top-k, renormalized for mixtral or norm_topk_prob), then a loop over the experts, each running its
    tokens through one product for gate and up and one for down, added back weighted with index_add_."""

    def __init__(self, c):
        super().__init__()
        C, F_ = c["hidden"], c["expert_intermediate"]
        self.K, self.normalize = c["experts_per_token"], c["normalize_top_k"]
        self.router = nn.Linear(C, c["experts"], bias=False)
        self.gate_up = nn.ModuleList(nn.Linear(C, 2 * F_, bias=False) for _ in range(c["experts"]))
        self.down = nn.ModuleList(nn.Linear(F_, C, bias=False) for _ in range(c["experts"]))

    def forward(self, h, router_logits):
        B, T, C = h.shape
        flat = h.reshape(-1, C)
        logits = self.router(flat).float()
        router_logits.append(logits)
        weights, chosen = logits.softmax(-1).topk(self.K, dim=-1)
        if self.normalize:
            weights = weights / weights.sum(-1, keepdim=True)
        weights = weights.to(h.dtype)
        out = torch.zeros_like(flat)
        for e in range(len(self.down)):
            token, slot = (chosen == e).nonzero(as_tuple=True)
            if len(token) == 0:
                continue
            gate, up = self.gate_up[e](flat[token]).chunk(2, dim=-1)
            out.index_add_(0, token, self.down[e](F.silu(gate) * up) * weights[token, slot, None])
        return out.view(B, T, C)


def load_balancing_loss(router_logits, K):
    """transformers' load_balancing_loss_func over every layer's router logits together."""
    probs = torch.cat(router_logits, 0).softmax(-1)
    _, chosen = probs.topk(K, dim=-1)
    share = F.one_hot(chosen, probs.shape[-1]).float().mean(0)
    return (share * probs.mean(0)[None]).sum() * probs.shape[-1]


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.gpt2 = c["model_type"] == "gpt2"
        C, F_ = c["hidden"], c["intermediate"]
        if self.gpt2:
            self.norm1, self.norm2 = nn.LayerNorm(C, eps=c["eps"]), nn.LayerNorm(C, eps=c["eps"])
            self.attn = CausalSelfAttention(c, bias=True)
            self.fc, self.proj = nn.Linear(C, F_), nn.Linear(F_, C)
        else:
            self.norm1, self.norm2 = RMSNorm(C, c["eps"]), RMSNorm(C, c["eps"])
            self.attn = CausalSelfAttention(c, bias=False)
            self.moe = SparseMoe(c) if c.get("experts") else None
            if self.moe is None:
                self.gate_up = nn.Linear(C, 2 * F_, bias=False)  # one product for the gate and the up projection
                self.down = nn.Linear(F_, C, bias=False)

    def forward(self, x, mask, rope, router_logits):
        x = x + self.attn(self.norm1(x), mask, rope)
        h = self.norm2(x)
        if self.gpt2:
            return x + self.proj(F.gelu(self.fc(h), approximate="tanh"))
        if self.moe is not None:
            return x + self.moe(h, router_logits)
        gate, up = self.gate_up(h).chunk(2, dim=-1)
        return x + self.down(F.silu(gate) * up)


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed = nn.Embedding(c["vocab"], c["hidden"])
        if c["model_type"] == "gpt2":
            self.positions = nn.Embedding(c["max_positions"], c["hidden"])
            self.norm = nn.LayerNorm(c["hidden"], eps=c["eps"])
        else:
            self.norm = RMSNorm(c["hidden"], c["eps"])
        self.blocks = nn.ModuleList(Block(c) for _ in range(c["layers"]))
        self.head = None if c["tied"] else nn.Linear(c["hidden"], c["vocab"], bias=False)

    def forward(self, ids):
        B, T = ids.shape
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        x = self.embed(ids)
        rope = None
        if self.c["model_type"] == "gpt2":
            x = x + self.positions(torch.arange(T))
        else:
            D = self.c["head_dim"]
            inv_freq = 1.0 / (self.c["theta"] ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
            angles = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq
            angles = torch.cat((angles, angles), -1)
            rope = (angles.cos().float(), angles.sin().float())
        self.router_logits = []
        for block in self.blocks:
            x = block(x, mask, rope, self.router_logits)
        x = self.norm(x)
        return F.linear(x, self.embed.weight if self.head is None else self.head.weight)

    def router_loss(self):
        """The weighted load-balancing loss Dew's training adds (docs/moe.md), or 0."""
        if not self.router_logits or not self.c.get("router_losses"):
            return 0.0
        return self.c["aux_loss_coef"] * load_balancing_loss(self.router_logits, self.c["experts_per_token"])


def segment_sums(a):
    """(..., l) -> (..., l, l): the sum of a over (s, t] at [t, s] for s <= t, -inf above (mamba_ssm's segsum)."""
    l = a.shape[-1]
    x = a[..., None].expand(*a.shape, l).masked_fill(~torch.ones(l, l, dtype=torch.bool).tril(-1), 0)
    return torch.cumsum(x, dim=-2).masked_fill(~torch.ones(l, l, dtype=torch.bool).tril(0), float("-inf"))


def ssd(x, dt, A, B, C, chunk):
    """Mamba-2's SSD in chunks as transformers' torch_forward computes it (mamba_ssm's ssd_minimal):
    x (b, L, h, p), dt (b, L, h), A (h), B and C (b, L, h, n) -> y (b, L, h, p)."""
    b, L, h, p = x.shape
    pad = (chunk - L % chunk) % chunk

    def chunks(t):
        t = F.pad(t, (0, 0) * (t.dim() - 2) + (0, pad))
        return t.reshape(b, -1, chunk, *t.shape[2:])

    x, a, B, C = chunks(x * dt[..., None]), chunks(A * dt).permute(0, 3, 1, 2), chunks(B), chunks(C)
    a_sum = torch.cumsum(a, dim=-1)  # (b, h, c, l)
    y_diag = torch.einsum("bclhn,bcshn,bhcls,bcshp->bclhp", C, B, torch.exp(segment_sums(a)), x)
    states = torch.einsum("bclhn,bhcl,bclhp->bchpn", B, torch.exp(a_sum[..., -1:] - a_sum), x)
    states = torch.cat([torch.zeros_like(states[:, :1]), states], dim=1)
    decay = torch.exp(segment_sums(F.pad(a_sum[..., -1], (1, 0))))  # (b, h, c + 1, c + 1)
    states = torch.einsum("bhzc,bchpn->bzhpn", decay, states)[:, :-1]
    y_off = torch.einsum("bclhn,bchpn,bhcl->bclhp", C, states, torch.exp(a_sum))
    return (y_diag + y_off).reshape(b, -1, h, p)[:, :L]


class Mamba2Mixer(nn.Module):
    """transformers' Mamba2Mixer.torch_forward without a cache: in_proj, the depthwise causal conv1d and
    SiLU, the SSD in chunks of 256, the D skip, the gated RMSNorm, out_proj."""

    def __init__(self, c):
        super().__init__()
        C, self.I, self.H, self.P, self.N, self.G = c["hidden"], c["inner"], c["heads"], c["head_dim"], c["state"], c["groups"]
        self.conv_dim = self.I + 2 * self.G * self.N
        self.in_proj = nn.Linear(C, self.I + self.conv_dim + self.H, bias=c["bias"])
        self.conv1d = nn.Conv1d(self.conv_dim, self.conv_dim, c["conv_kernel"], groups=self.conv_dim,
                                padding=c["conv_kernel"] - 1, bias=c["conv_bias"])
        self.dt_bias = nn.Parameter(torch.zeros(self.H))
        self.A_log = nn.Parameter(torch.log(torch.arange(1, self.H + 1, dtype=torch.float32)))
        self.D = nn.Parameter(torch.ones(self.H))
        self.norm = RMSNorm(self.I, c["eps"])
        self.out_proj = nn.Linear(self.I, C, bias=c["bias"])

    def forward(self, h):
        b, L, _ = h.shape
        z, xbc, dt = self.in_proj(h).split([self.I, self.conv_dim, self.H], dim=-1)
        xbc = F.silu(self.conv1d(xbc.transpose(1, 2))[..., :L].transpose(1, 2))
        x, B, C = xbc.split([self.I, self.G * self.N, self.G * self.N], dim=-1)
        x = x.reshape(b, L, self.H, self.P).float()
        B = B.reshape(b, L, self.G, self.N).repeat_interleave(self.H // self.G, dim=2).float()
        C = C.reshape(b, L, self.G, self.N).repeat_interleave(self.H // self.G, dim=2).float()
        dt = F.softplus(dt + self.dt_bias).float()
        y = ssd(x, dt, -torch.exp(self.A_log.float()), B, C, 256) + self.D[:, None] * x
        y = y.reshape(b, L, self.I) * F.silu(z.float())
        return self.out_proj(self.norm(y).to(h.dtype))


class Mamba2(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed = nn.Embedding(c["vocab"], c["hidden"])
        self.norms = nn.ModuleList(RMSNorm(c["hidden"], c["eps"]) for _ in range(c["layers"]))
        self.mixers = nn.ModuleList(Mamba2Mixer(c) for _ in range(c["layers"]))
        self.norm = RMSNorm(c["hidden"], c["eps"])
        self.head = None if c["tied"] else nn.Linear(c["hidden"], c["vocab"], bias=False)

    def forward(self, ids):
        x = self.embed(ids).float()  # residual_in_fp32
        for norm, mixer in zip(self.norms, self.mixers):
            x = x + mixer(norm(x)).float()
        return F.linear(self.norm(x), self.embed.weight if self.head is None else self.head.weight)

    def router_loss(self):
        return 0.0


class PlusOneNorm(RMSNorm):
    """qwen3_next's RMSNorm, scaling by 1 + w (w starts at 0)."""

    def __init__(self, C, eps):
        super().__init__(C, eps)
        nn.init.zeros_(self.weight)

    def forward(self, x):
        return (1 + self.weight) * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def chunk_gated_delta_rule(q, k, v, g, beta, chunk=64):
    """transformers' torch_chunk_gated_delta_rule (the WY form in chunks of 64), its row-by-row inverse of
    the chunk's unit lower-triangular matrix taken by one batched triangular solve: q, k (b, L, h, dk)
    l2-normalized, v (b, L, h, dv), g and beta (b, L, h) -> (b, L, h, dv)."""
    b, L, h, dk = k.shape
    q = q * dk ** -0.5
    pad = (chunk - L % chunk) % chunk
    q, k, v, g, beta = (F.pad(t.transpose(1, 2).float(), (0, 0, 0, pad) if t.dim() == 4 else (0, pad))
                        for t in (q, k, v, g, beta))
    n = (L + pad) // chunk
    q, k, v = (t.reshape(b, h, n, chunk, -1) for t in (q, k, v))
    g, beta = g.reshape(b, h, n, chunk).cumsum(-1), beta.reshape(b, h, n, chunk)
    k_beta, v_beta = k * beta[..., None], v * beta[..., None]
    decay = (g[..., :, None] - g[..., None, :]).tril().exp().tril()  # (b, h, n, c, c)
    strict = ((k_beta @ k.transpose(-1, -2)) * decay).tril(-1)
    eye = torch.eye(chunk, dtype=q.dtype)
    inverse = torch.linalg.solve_triangular(eye + strict, eye.expand_as(strict), upper=False, unitriangular=True)
    u, w = inverse @ v_beta, inverse @ (k_beta * g.exp()[..., None])
    state = q.new_zeros(b, h, dk, v.shape[-1])
    out = []
    for i in range(n):
        within = (q[:, :, i] @ k[:, :, i].transpose(-1, -2) * decay[:, :, i]).tril()
        v_new = u[:, :, i] - w[:, :, i] @ state
        out.append((q[:, :, i] * g[:, :, i, :, None].exp()) @ state + within @ v_new)
        last = g[:, :, i, -1, None]
        state = state * last[..., None].exp() + (k[:, :, i] * (last - g[:, :, i]).exp()[..., None]).transpose(-1, -2) @ v_new
    return torch.stack(out, 2).reshape(b, h, -1, v.shape[-1])[:, :, :L].transpose(1, 2)


class GatedDeltaNet(nn.Module):
    """transformers' Qwen3NextGatedDeltaNet without a cache: the per-key-head projections, the depthwise
    causal conv1d with SiLU, l2-normalized q and k, the chunked gated delta rule, the gated RMSNorm."""

    def __init__(self, c):
        super().__init__()
        C, self.Hk, self.Hv, self.Dk, self.Dv = c["hidden"], c["key_heads"], c["value_heads"], c["key_dim"], c["value_dim"]
        self.r = self.Hv // self.Hk
        self.conv_dim = 2 * self.Hk * self.Dk + self.Hv * self.Dv
        self.in_proj_qkvz = nn.Linear(C, 2 * self.Hk * self.Dk + 2 * self.Hv * self.Dv, bias=False)
        self.in_proj_ba = nn.Linear(C, 2 * self.Hv, bias=False)
        self.conv1d = nn.Conv1d(self.conv_dim, self.conv_dim, c["conv_kernel"], groups=self.conv_dim,
                                padding=c["conv_kernel"] - 1, bias=False)
        self.dt_bias = nn.Parameter(torch.ones(self.Hv))
        self.A_log = nn.Parameter(torch.empty(self.Hv).uniform_(0, 16).log())
        self.norm = RMSNorm(self.Dv, c["eps"])
        self.out_proj = nn.Linear(self.Hv * self.Dv, C, bias=False)

    def forward(self, x):
        b, L, _ = x.shape
        Hk, Hv, Dk, Dv, r = self.Hk, self.Hv, self.Dk, self.Dv, self.r
        q, k, v, z = self.in_proj_qkvz(x).view(b, L, Hk, -1).split([Dk, Dk, r * Dv, r * Dv], dim=-1)
        beta, a = self.in_proj_ba(x).view(b, L, Hk, 2 * r).split([r, r], dim=-1)
        mixed = torch.cat([q.reshape(b, L, -1), k.reshape(b, L, -1), v.reshape(b, L, -1)], -1)
        mixed = F.silu(self.conv1d(mixed.transpose(1, 2))[..., :L]).transpose(1, 2)
        q, k, v = mixed.split([Hk * Dk, Hk * Dk, Hv * Dv], dim=-1)
        l2 = lambda t: t * torch.rsqrt((t * t).sum(-1, keepdim=True) + 1e-6)
        q = l2(q.reshape(b, L, Hk, Dk).float()).repeat_interleave(r, dim=2)
        k = l2(k.reshape(b, L, Hk, Dk).float()).repeat_interleave(r, dim=2)
        g = -self.A_log.float().exp() * F.softplus(a.reshape(b, L, Hv).float() + self.dt_bias)
        y = chunk_gated_delta_rule(q, k, v.reshape(b, L, Hv, Dv), g, beta.reshape(b, L, Hv).sigmoid())
        y = self.norm(y) * F.silu(z.reshape(b, L, Hv, Dv).float())
        return self.out_proj(y.reshape(b, L, Hv * Dv).to(x.dtype))


class GatedAttention(nn.Module):
    """Qwen3NextAttention: q (with each head's gate logits), k and v in one product, per-head q/k norms
    scaling by 1 + w, rope on the first rotary dims, the output times sigmoid(gate)."""

    def __init__(self, c):
        super().__init__()
        C, self.H, self.KV, self.D = c["hidden"], c["heads"], c["kv_heads"], c["head_dim"]
        self.qkv = nn.Linear(C, (2 * self.H + 2 * self.KV) * self.D, bias=False)
        self.q_norm, self.k_norm = PlusOneNorm(self.D, c["eps"]), PlusOneNorm(self.D, c["eps"])
        self.o = nn.Linear(self.H * self.D, C, bias=False)

    def forward(self, x, mask, rope):
        B, T, _ = x.shape
        H, KV, D = self.H, self.KV, self.D
        qg, k, v = self.qkv(x).split([2 * H * D, KV * D, KV * D], dim=-1)
        q, gate = qg.view(B, T, H, 2 * D).split([D, D], dim=-1)
        q = self.q_norm(q).transpose(1, 2)
        k = self.k_norm(k.view(B, T, KV, D)).transpose(1, 2)
        v = v.view(B, T, KV, D).transpose(1, 2)
        cos, sin = rope
        r = cos.shape[-1]
        q = torch.cat((q[..., :r] * cos + rotate_half(q[..., :r]) * sin, q[..., r:]), -1)
        k = torch.cat((k[..., :r] * cos + rotate_half(k[..., :r]) * sin, k[..., r:]), -1)
        k, v = k.repeat_interleave(H // KV, dim=1), v.repeat_interleave(H // KV, dim=1)
        scores = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(D))
        attended = (scores.masked_fill(mask, float("-inf")).softmax(-1) @ v).transpose(1, 2).reshape(B, T, H * D)
        return self.o(attended * torch.sigmoid(gate.reshape(B, T, H * D)))


class Qwen3NextBlock(nn.Module):
    def __init__(self, c, linear, sparse):
        super().__init__()
        C = c["hidden"]
        self.norm1, self.norm2 = PlusOneNorm(C, c["eps"]), PlusOneNorm(C, c["eps"])
        self.mixer = GatedDeltaNet(c) if linear else GatedAttention(c)
        self.linear = linear
        self.moe = SparseMoe(c) if sparse else None
        F_ = c["shared_intermediate"] if sparse else c["intermediate"]
        self.gate_up, self.down = nn.Linear(C, 2 * F_, bias=False), nn.Linear(F_, C, bias=False)
        self.shared_gate = nn.Linear(C, 1, bias=False) if sparse else None

    def forward(self, x, mask, rope, router_logits):
        h = self.norm1(x)
        x = x + (self.mixer(h) if self.linear else self.mixer(h, mask, rope))
        h = self.norm2(x)
        gate, up = self.gate_up(h).chunk(2, dim=-1)
        dense = self.down(F.silu(gate) * up)  # the MLP, or the shared expert
        if self.moe is None:
            return x + dense
        return x + self.moe(h, router_logits) + torch.sigmoid(self.shared_gate(h)) * dense


class Qwen3Next(Model):
    def __init__(self, c):
        nn.Module.__init__(self)
        self.c = c
        self.embed = nn.Embedding(c["vocab"], c["hidden"])
        self.norm = PlusOneNorm(c["hidden"], c["eps"])
        self.blocks = nn.ModuleList(Qwen3NextBlock(c, kind == "linear_attention", i in c["sparse_layers"])
                                    for i, kind in enumerate(c["layer_types"]))
        self.head = None if c["tied"] else nn.Linear(c["hidden"], c["vocab"], bias=False)

    def forward(self, ids):
        T = ids.shape[1]
        D = int(self.c["head_dim"] * self.c["partial_rotary_factor"])
        inv_freq = 1.0 / (self.c["theta"] ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
        angles = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq
        angles = torch.cat((angles, angles), -1)
        rope = (angles.cos().float(), angles.sin().float())
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        x = self.embed(ids)
        self.router_logits = []
        for block in self.blocks:
            x = block(x, mask, rope, self.router_logits)
        return F.linear(self.norm(x), self.embed.weight if self.head is None else self.head.weight)


def read_config(path):
    with open(path) as f:
        j = json.load(f)
    if j["model_type"] == "gpt2":
        C, H = j["n_embd"], j["n_head"]
        return {"model_type": "gpt2", "vocab": j["vocab_size"], "hidden": C, "intermediate": j.get("n_inner") or 4 * C,
                "layers": j["n_layer"], "heads": H, "kv_heads": H, "head_dim": C // H,
                "max_positions": j["n_positions"], "eps": j["layer_norm_epsilon"],
                "tied": j.get("tie_word_embeddings", True)}
    if j["model_type"] == "mamba2":
        return {"model_type": "mamba2", "vocab": j["vocab_size"], "hidden": j["hidden_size"],
                "inner": j["expand"] * j["hidden_size"], "layers": j["num_hidden_layers"], "heads": j["num_heads"],
                "head_dim": j["head_dim"], "state": j["state_size"], "groups": j["n_groups"],
                "conv_kernel": j["conv_kernel"], "bias": j["use_bias"], "conv_bias": j["use_conv_bias"],
                "eps": j["layer_norm_epsilon"], "tied": j.get("tie_word_embeddings", False)}
    if j["model_type"] == "qwen3_next":  # Dew writes every field out (model_config_json)
        E, L = j["num_experts"], j["num_hidden_layers"]
        sparse = [i for i in range(L) if E > 0 and i not in j["mlp_only_layers"] and (i + 1) % j["decoder_sparse_step"] == 0]
        return {"model_type": "qwen3_next", "vocab": j["vocab_size"], "hidden": j["hidden_size"],
                "intermediate": j["intermediate_size"], "layers": L, "heads": j["num_attention_heads"],
                "kv_heads": j["num_key_value_heads"], "head_dim": j["head_dim"], "eps": j["rms_norm_eps"],
                "theta": j["rope_theta"], "partial_rotary_factor": j["partial_rotary_factor"],
                "tied": j["tie_word_embeddings"], "layer_types": j["layer_types"],
                "key_heads": j["linear_num_key_heads"], "value_heads": j["linear_num_value_heads"],
                "key_dim": j["linear_key_head_dim"], "value_dim": j["linear_value_head_dim"],
                "conv_kernel": j["linear_conv_kernel_dim"], "sparse_layers": sparse, "experts": E,
                "experts_per_token": j["num_experts_per_tok"], "expert_intermediate": j["moe_intermediate_size"],
                "shared_intermediate": j["shared_expert_intermediate_size"], "normalize_top_k": j["norm_topk_prob"],
                "router_losses": j["output_router_logits"], "aux_loss_coef": j["router_aux_loss_coef"]}
    if j["model_type"] not in ("llama", "mistral", "qwen2", "qwen3", "mixtral") or j.get("rope_scaling"):
        raise SystemExit(f"train_pytorch.py: model_type {j['model_type']} with these fields is not written here")
    C, H = j["hidden_size"], j["num_attention_heads"]
    c = {"model_type": "llama", "vocab": j["vocab_size"], "hidden": C, "intermediate": j["intermediate_size"],
         "layers": j["num_hidden_layers"], "heads": H, "kv_heads": j.get("num_key_value_heads", H),
         "head_dim": j.get("head_dim", C // H), "eps": j.get("rms_norm_eps", 1e-6),
         "theta": j.get("rope_theta", 10000.0), "tied": j.get("tie_word_embeddings", False)}
    if j["model_type"] == "mixtral":  # Dew writes every field out (model_config_json)
        c.update(experts=j["num_local_experts"], experts_per_token=j["num_experts_per_tok"],
                 expert_intermediate=j["intermediate_size"], normalize_top_k=True,
                 router_losses=j["output_router_logits"], aux_loss_coef=j["router_aux_loss_coef"])
    return c


# The kinds of Dew's StepProfile, from each aten op's self time (its children's time is theirs).
ATTENTION = {"aten::bmm", "aten::baddbmm", "aten::_softmax", "aten::_softmax_backward_data", "aten::masked_fill",
             "aten::masked_fill_"}
NORMS = {"aten::native_layer_norm", "aten::native_layer_norm_backward"}
CROSS_ENTROPY = {"aten::_log_softmax", "aten::_log_softmax_backward_data", "aten::nll_loss_forward",
                 "aten::nll_loss_backward"}
EMBEDDING = {"aten::embedding", "aten::embedding_backward", "aten::embedding_dense_backward",
             "aten::index_select", "aten::index_add_", "aten::index", "aten::index_put_"}
LAYOUT = {"aten::copy_", "aten::clone", "aten::cat", "aten::contiguous", "aten::view", "aten::_unsafe_view",
          "aten::reshape", "aten::transpose", "aten::t", "aten::permute", "aten::split", "aten::split_with_sizes",
          "aten::chunk", "aten::as_strided", "aten::expand", "aten::select", "aten::slice", "aten::unsqueeze",
          "aten::squeeze", "aten::empty", "aten::empty_strided", "aten::empty_like", "aten::zeros", "aten::zero_",
          "aten::fill_", "aten::detach", "aten::alias", "aten::resize_", "aten::ones", "aten::triu", "aten::arange",
          "aten::repeat_interleave", "aten::narrow", "aten::unbind", "aten::stack"}
KINDS = ["GEMM forward", "GEMM input gradient", "GEMM weight gradient", "GEMM recompute", "GEMM head", "attention",
         "norms", "element-wise", "copies and layout", "cross-entropy", "embedding", "casts",
         "gradient norm and clipping", "optimizer", "remainder"]
PHASES = {"forward", "backward", "clipping", "optimizer"}


def ancestors(event):
    e = event.cpu_parent
    while e is not None:
        yield e
        e = e.cpu_parent


def gemm_dims(event):
    shapes = [s for s in event.input_shapes if len(s) == 2]
    if len(shapes) < 2:
        return None
    (m, k), (_, n) = shapes[-2], shapes[-1]
    return m, n, k


def shape_role(dims, rows):
    """A backward product's role from its shape where the shape tells: the weight gradient sums over the
    B T rows (K = rows), the input gradient has one output row per row (M = rows)."""
    if dims is None or (dims[2] == rows) == (dims[0] == rows):
        return None
    return "weight gradient" if dims[2] == rows else "input gradient"


def gemm_roles(events, rows):
    """Backward GEMMs by role: by shape where one tells (shape_role); otherwise, of the two products an
    autograd node runs (AddmmBackward0, MmBackward0), torch 1.13 runs the weight gradient (grad^T @ input)
    first and the input gradient (grad @ weight) second for nn.Linear's weights (their shapes agree when
    a layer is as wide as there are rows: 2048 with B T = 2048)."""
    roles = {}
    children = {}
    for event in events:
        if event.name not in ("aten::mm", "aten::addmm"):
            continue
        node = next((a for a in ancestors(event) if "Backward" in a.name), None)
        if node is not None:
            children.setdefault(id(node), []).append(event)
    for products in children.values():
        if len(products) == 2:
            first, second = sorted(products, key=lambda e: e.time_range.start)
            by_shape = [shape_role(gemm_dims(e), rows) for e in (first, second)]
            if None not in by_shape and by_shape[0] != by_shape[1]:
                roles[id(first)], roles[id(second)] = by_shape
            else:
                roles[id(first)] = "weight gradient"
                roles[id(second)] = "input gradient"
    return roles


def classify(event, phase, rows, vocab, roles):
    name = event.name
    if phase == "optimizer":
        return "optimizer", None
    if phase == "clipping":
        return "gradient norm and clipping", None
    if name in ("aten::mm", "aten::addmm"):
        dims = gemm_dims(event)
        if dims is None:
            return "element-wise", None
        role = "forward" if phase == "forward" else roles.get(id(event), shape_role(dims, rows) or "input gradient")
        kind = "GEMM head" if vocab in dims else "GEMM " + role
        return kind, ("head " + role if kind == "GEMM head" else role) + "  %dx%dx%d" % dims
    if name in ATTENTION:
        return "attention", None
    if name in NORMS:
        return "norms", None
    if name in CROSS_ENTROPY:
        return "cross-entropy", None
    if name in EMBEDDING:
        return "embedding", None
    if name == "aten::_to_copy" or (name == "aten::copy_" and any(a.name == "aten::_to_copy" for a in ancestors(event))):
        return "casts", None
    if name in LAYOUT:
        return "copies and layout", None
    if name.startswith("aten::"):
        return "element-wise", None
    return None, None  # the profiler's scopes and autograd's nodes: their self time is the remainder


def profiled_step(step, vocab, rows):
    """One step under torch.profiler: its time by Dew's kinds, per step, as step_profile_json writes."""
    from torch.profiler import ProfilerActivity, profile, record_function
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        start = time.perf_counter()
        step(record_function)
        step_s = time.perf_counter() - start
    kinds = {k: [0, 0.0, 0.0] for k in KINDS}
    gemms = {}
    accounted = 0.0
    events = prof.events()
    roles = gemm_roles(events, rows)
    for event in events:
        phase = next((a.name for a in ancestors(event) if a.name in PHASES), "")
        kind, gemm = classify(event, phase, rows, vocab, roles)
        if kind is None:
            continue
        seconds = event.self_cpu_time_total * 1e-6
        flops = 0.0
        if gemm is not None:
            m, n, k = (int(x) for x in re.findall(r"\d+", gemm.split("  ")[1]))
            flops = 2.0 * m * n * k
            g = gemms.setdefault(gemm, [0, 0.0, 0.0])
            g[0] += 1
            g[1] += seconds
            g[2] += flops
        kinds[kind][0] += 1
        kinds[kind][1] += seconds
        kinds[kind][2] += flops
        accounted += seconds
    kinds["remainder"][1] = max(0.0, step_s - accounted)
    return {"steps": 1, "step_seconds": step_s,
            "kinds": [{"name": k, "calls": v[0], "seconds": v[1], "flops": v[2]} for k, v in kinds.items()],
            "gemms": sorted(({"name": k, "calls": v[0], "seconds": v[1], "flops": v[2]} for k, v in gemms.items()),
                            key=lambda r: -r["seconds"])}


def main():
    config_path, B, T, steps, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    bf16 = len(sys.argv) > 6 and sys.argv[6] == "bf16"
    torch.set_num_threads(threads)
    # Arithmetic on subnormal floats runs through microcode on Intel CPUs, which slowed PyTorch's steps many
    # times over on the Xeon (docs/perf.md, "Training against PyTorch"): at its best, PyTorch flushes them.
    torch.set_flush_denormal(True)
    torch.manual_seed(0)
    c = read_config(config_path)
    model = {"mamba2": Mamba2, "qwen3_next": Qwen3Next}.get(c["model_type"], Model)(c)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "embed" not in n and "positions" not in n]
    rest = [p for n, p in model.named_parameters() if not (p.dim() >= 2 and "embed" not in n and "positions" not in n)]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                                  lr=3e-4, betas=(0.9, 0.95), eps=1e-8, foreach=True)
    profile_step = len(sys.argv) > 7 and sys.argv[7] == "profile"
    generator = torch.Generator().manual_seed(1)

    def step(scope):
        tokens = torch.randint(0, c["vocab"], (B, T + 1), generator=generator)
        with scope("forward"):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                logits = model(tokens[:, :T])
                loss = F.cross_entropy(logits.reshape(B * T, c["vocab"]), tokens[:, 1:].reshape(B * T))
                loss = loss + model.router_loss()
        with scope("backward"):
            loss.backward()
        with scope("clipping"):
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        with scope("optimizer"):
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        loss.item()

    times = []
    usage = None
    for index in range(steps + 1):
        start = time.perf_counter()
        step(lambda name: contextlib.nullcontext())
        if index > 0:  # the first step warms the allocator and the kernels' first-use paths
            times.append(time.perf_counter() - start)
        else:
            usage = resource.getrusage(resource.RUSAGE_SELF)
    after = resource.getrusage(resource.RUSAGE_SELF)
    out = {"step_s": times, "max_rss_bytes": after.ru_maxrss * 1024, "torch": torch.__version__}
    if profile_step:
        out["profile"] = profiled_step(step, c["vocab"], B * T)
        # Faults and system time over the timed steps, unprofiled (the profiler allocates its records).
        out["profile"]["minor_faults"] = (after.ru_minflt - usage.ru_minflt) / steps
        out["profile"]["system_seconds"] = (after.ru_stime - usage.ru_stime) / steps
    print(json.dumps(out))

if __name__ == "__main__":
    main()
