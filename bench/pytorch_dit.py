"""The DiT of a Dew config in plain PyTorch, written as PyTorch is used at its best on a CPU: nn.Linear,
q, k and v in one product, the patch embedding a strided Conv2d, fused F.layer_norm and F.gelu (torch
1.13 has no scaled_dot_product_attention: attention is matmul, softmax, matmul). The model side of
bench/image_pytorch.py."""
import math

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
