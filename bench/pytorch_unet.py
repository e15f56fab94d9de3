"""The UNet of a Dew config (diffusers' UNet2DModel layout, as Dew computes it) in plain PyTorch, written as
PyTorch is used at its best on a CPU: nn.Conv2d, nn.GroupNorm, F.silu, F.interpolate and nn.Linear
(torch 1.13 has no scaled_dot_product_attention: attention is matmul, softmax, matmul); channels-last
when image_pytorch.py is asked for it. The model side of bench/image_pytorch.py."""
import math

import torch
import torch.nn.functional as F
from torch import nn


def timestep_embedding(t, dim, flip, shift):  # diffusers' get_timestep_embedding
    half = dim // 2
    exponent = -math.log(10000) * torch.arange(half, dtype=torch.float32) / (half - shift)
    emb = t[:, None].float() * torch.exp(exponent)[None]
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
    return torch.cat([emb[:, half:], emb[:, :half]], dim=-1) if flip else emb


class GroupNorm(nn.GroupNorm):
    """torch 1.13's CPU group_norm takes no bf16 input with f32 weights (autocast leaves it to the
    caller): under autocast it normalizes in f32, and the next convolution casts back to bf16."""

    def forward(self, x):
        return F.group_norm(x.float(), self.num_groups, self.weight, self.bias, self.eps)


class Resnet(nn.Module):
    def __init__(self, cin, cout, temb, groups, eps):
        super().__init__()
        self.norm1, self.conv1 = GroupNorm(groups, cin, eps), nn.Conv2d(cin, cout, 3, padding=1)
        self.time_emb_proj = nn.Linear(temb, cout)
        self.norm2, self.conv2 = GroupNorm(groups, cout, eps), nn.Conv2d(cout, cout, 3, padding=1)
        self.conv_shortcut = nn.Conv2d(cin, cout, 1) if cin != cout else None

    def forward(self, x, emb_act):
        h = self.conv1(F.silu(self.norm1(x))) + self.time_emb_proj(emb_act)[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return (self.conv_shortcut(x) if self.conv_shortcut is not None else x) + h


class Attention(nn.Module):
    def __init__(self, ch, head_dim, groups, eps):
        super().__init__()
        self.heads = ch // head_dim if head_dim else 1
        self.group_norm = GroupNorm(groups, ch, eps)
        self.to_q, self.to_k, self.to_v, self.to_out = (nn.Linear(ch, ch) for _ in range(4))

    def forward(self, x):
        B, C, H, W = x.shape
        a = self.group_norm(x).reshape(B, C, H * W).transpose(1, 2)
        d = C // self.heads
        q, k, v = (p(a).reshape(B, H * W, self.heads, d).transpose(1, 2) for p in (self.to_q, self.to_k, self.to_v))
        o = (torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1) @ v).transpose(1, 2).reshape(B, H * W, C)
        return self.to_out(o).transpose(1, 2).reshape(B, C, H, W) + x


class UNet(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        chans, layers = c["block_out_channels"], c.get("layers_per_block", 2)
        groups, eps, hd = c.get("norm_num_groups", 32), c.get("norm_eps", 1e-5), c.get("attention_head_dim", 8)
        C0, E = chans[0], 4 * chans[0]
        self.conv_in = nn.Conv2d(c["in_channels"], C0, 3, padding=1)
        self.t1, self.t2 = nn.Linear(C0, E), nn.Linear(E, E)
        self.classes = nn.Embedding(c["num_classes"] + 1, E) if c.get("num_classes", 0) else None
        self.down, ch, skips = nn.ModuleList(), C0, [C0]
        for i, kind in enumerate(c["down_block_types"]):
            blocks = nn.ModuleList()
            for j in range(layers):
                blocks.append(Resnet(ch, chans[i], E, groups, eps))
                ch = chans[i]
                blocks.append(Attention(ch, hd, groups, eps) if kind.startswith("Attn") else nn.Identity())
                skips.append(ch)
            if i + 1 < len(chans):
                blocks.append(nn.Conv2d(ch, ch, 3, stride=2, padding=1))
                skips.append(ch)
            self.down.append(blocks)
        self.mid = nn.ModuleList([Resnet(ch, ch, E, groups, eps),
                                  Attention(ch, hd, groups, eps) if c.get("add_attention", True) else nn.Identity(),
                                  Resnet(ch, ch, E, groups, eps)])
        self.up = nn.ModuleList()
        for i, kind in enumerate(c["up_block_types"]):
            out, blocks = chans[len(chans) - 1 - i], nn.ModuleList()
            for j in range(layers + 1):
                blocks.append(Resnet(ch + skips.pop(), out, E, groups, eps))
                ch = out
                blocks.append(Attention(ch, hd, groups, eps) if kind.startswith("Attn") else nn.Identity())
            if i + 1 < len(chans):
                blocks.append(nn.Conv2d(ch, ch, 3, padding=1))
            self.up.append(blocks)
        self.norm_out, self.conv_out = GroupNorm(groups, C0, eps), nn.Conv2d(C0, c["out_channels"], 3, padding=1)

    def forward(self, x, t, y):
        c, layers = self.c, self.c.get("layers_per_block", 2)
        temb = timestep_embedding(t * c.get("time_scale", 1.0), c["block_out_channels"][0],
                                  c.get("flip_sin_to_cos", True), c.get("freq_shift", 0))
        emb = self.t2(F.silu(self.t1(temb.to(x.dtype))))
        if self.classes is not None:
            emb = emb + self.classes(y)
        emb_act = F.silu(emb)
        h = self.conv_in(x)
        skips = [h]
        for blocks in self.down:
            for j in range(layers):
                h = blocks[2 * j + 1](blocks[2 * j](h, emb_act))
                skips.append(h)
            if len(blocks) > 2 * layers:
                h = blocks[-1](h)
                skips.append(h)
        h = self.mid[2](self.mid[1](self.mid[0](h, emb_act)), emb_act)
        for blocks in self.up:
            for j in range(layers + 1):
                h = blocks[2 * j + 1](blocks[2 * j](torch.cat([h, skips.pop()], dim=1), emb_act))
            if len(blocks) > 2 * (layers + 1):
                h = blocks[-1](F.interpolate(h, scale_factor=2.0, mode="nearest"))
        return self.conv_out(F.silu(self.norm_out(h)))
