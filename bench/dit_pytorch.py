#!/usr/bin/python3
"""PyTorch's side of the DiT training comparison (docs/perf.md, "Training a DiT against PyTorch"): the
DiT of a Dew config (facebookresearch/DiT's architecture, as Dew computes it) trained by flow matching
on random images in [-1, 1] with random labels: the same batch, class dropout 0.1, AdamW (0.9/0.99, no
weight decay), global-norm clipping at 1.0. Written as PyTorch is used at its best on a CPU: nn.Linear,
q, k and v in one product, the patch embedding a strided Conv2d, fused F.layer_norm and F.gelu,
foreach AdamW; run it with jemalloc preloaded and OMP_WAIT_POLICY=PASSIVE (bench/dit_compare.sh does).
torch 1.13 has no scaled_dot_product_attention: attention is matmul, softmax, matmul.
With PRECISION bf16 the forward and loss run under torch.autocast("cpu", dtype=torch.bfloat16).

Usage: dit_pytorch.py CONFIG_TOML_MODEL_JSON B STEPS THREADS PRECISION. Prints one JSON line: the seconds
of each step after two warm-up steps.
"""
import json
import math
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn


def timestep_embedding(t, dim, max_period=10000):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32) / half)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


def sincos_2d(dim, g):
    def one(d, pos):
        omega = 1.0 / 10000 ** (torch.arange(d // 2, dtype=torch.float64) / (d / 2.0))
        out = pos.reshape(-1)[:, None] * omega[None]
        return torch.cat([torch.sin(out), torch.cos(out)], dim=1)
    a = torch.arange(g, dtype=torch.float64)
    gw, gh = torch.meshgrid(a, a, indexing="xy")
    return torch.cat([one(dim // 2, gw), one(dim // 2, gh)], dim=1).float()


class Block(nn.Module):
    def __init__(self, h, heads, mlp):
        super().__init__()
        self.heads = heads
        self.qkv, self.proj = nn.Linear(h, 3 * h), nn.Linear(h, h)
        self.fc1, self.fc2 = nn.Linear(h, mlp), nn.Linear(mlp, h)
        self.ada = nn.Linear(h, 6 * h)

    def forward(self, x, c):
        B, T, h = x.shape
        m = self.ada(c).chunk(6, dim=1)
        a = F.layer_norm(x, (h,), eps=1e-6) * (1 + m[1][:, None]) + m[0][:, None]
        q, k, v = self.qkv(a).reshape(B, T, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(h // self.heads), dim=-1) @ v
        x = x + m[2][:, None] * self.proj(att.transpose(1, 2).reshape(B, T, h))
        a = F.layer_norm(x, (h,), eps=1e-6) * (1 + m[4][:, None]) + m[3][:, None]
        return x + m[5][:, None] * self.fc2(F.gelu(self.fc1(a), approximate="tanh"))


class DiT(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        h, p, C = c["hidden_size"], c["patch_size"], c.get("in_channels", 1)
        self.x_embedder = nn.Conv2d(C, h, p, stride=p)
        self.register_buffer("pos", sincos_2d(h, c["image_size"] // p)[None])
        self.t1, self.t2 = nn.Linear(c.get("frequency_embedding_size", 256), h), nn.Linear(h, h)
        self.y = nn.Embedding(c["num_classes"] + 1, h)
        self.blocks = nn.ModuleList(Block(h, c["num_heads"], round(h * c.get("mlp_ratio", 4.0))) for _ in range(c["depth"]))
        self.final_ada, self.final = nn.Linear(h, 2 * h), nn.Linear(h, p * p * C)

    def forward(self, x, t, y):
        c = self.c
        h, p, S = c["hidden_size"], c["patch_size"], c["image_size"]
        B, C = x.shape[0], x.shape[1]
        tokens = self.x_embedder(x).flatten(2).transpose(1, 2) + self.pos
        temb = timestep_embedding(t * c.get("time_scale", 1.0), c.get("frequency_embedding_size", 256))
        cond = F.silu(self.t2(F.silu(self.t1(temb.to(tokens.dtype)))) + self.y(y))
        for b in self.blocks:
            tokens = b(tokens, cond)
        shift, scale = self.final_ada(cond).chunk(2, dim=1)
        out = self.final(F.layer_norm(tokens, (h,), eps=1e-6) * (1 + scale[:, None]) + shift[:, None])
        g = S // p
        return torch.einsum("nhwcpq->nchpwq", out.reshape(B, g, g, C, p, p)).reshape(B, C, S, S)


def main():
    config, B, steps, threads = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    precision = sys.argv[5]
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = DiT(config)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, foreach=True)
    S, C, K = config["image_size"], config.get("in_channels", 1), config["num_classes"]
    times = []
    for step in range(steps + 2):
        start = time.perf_counter()
        x0 = torch.rand(B, C, S, S) * 2 - 1
        y = torch.randint(0, K, (B,))
        y = torch.where(torch.rand(B) < 0.1, torch.full_like(y, K), y)
        t = torch.rand(B)
        eps = torch.randn_like(x0)
        xt = (1 - t)[:, None, None, None] * x0 + t[:, None, None, None] * eps
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16"):
            out = model(xt, t, y)
            loss = ((out.float() - (eps - x0)) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step >= 2:
            times.append(time.perf_counter() - start)
    print(json.dumps({"step_seconds": times}))


if __name__ == "__main__":
    main()
