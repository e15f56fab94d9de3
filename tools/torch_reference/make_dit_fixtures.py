#!/usr/bin/python3
"""Writes tests/models/torch_fixtures/<name>/ for Dew's DiT: a small random checkpoint (config.json,
model.safetensors in bf16) and torch_outputs.safetensors: inputs (images, times, labels, r), the outputs
of a plain PyTorch DiT in float32 and float64, the gradients of <output, cotangent> for a few
parameters and the images, and the output's tangent along (images, times) directions (forward mode, as
MeanFlow's objective takes it). The DiT here is written from facebookresearch/DiT's models.py: the patch
embedding is a strided Conv2d, the fixed position table DiT's get_2d_sincos_pos_embed; one difference,
as Dew documents: the final linear's outputs are ordered (c, i, j) per patch, channel-major.

Run with Debian's PyTorch: apt-get install python3-torch && /usr/bin/python3 tools/torch_reference/make_dit_fixtures.py
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from image_fixtures import write_image_fixture  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "models", "torch_fixtures")

BASE = {"model_type": "dit", "image_size": 8, "in_channels": 2, "patch_size": 2, "hidden_size": 32, "depth": 2,
        "num_heads": 4, "mlp_ratio": 2.0, "frequency_embedding_size": 16}
CONFIGS = {
    # classes with the null row, the fixed position table, times scaled as a flow model's
    "dit": dict(BASE, num_classes=3, class_dropout_prob=0.1, time_scale=1000.0),
    # MeanFlow's two times, a learned position table, no classes
    "dit_meanflow": dict(BASE, num_classes=0, class_dropout_prob=0.0, learned_position_embedding=True,
                         time_scale=1000.0, time_inputs=2),
}


def parameter_shapes(c):
    h, p, C, F_ = c["hidden_size"], c["patch_size"], c["in_channels"], c["frequency_embedding_size"]
    mlp = round(h * c["mlp_ratio"])
    tokens = (c["image_size"] // p) ** 2
    s = {"x_embedder.proj.weight": (h, C, p, p), "x_embedder.proj.bias": (h,)}
    if c.get("learned_position_embedding"):
        s["pos_embed"] = (1, tokens, h)
    for e in ["t_embedder"] + (["r_embedder"] if c.get("time_inputs", 1) == 2 else []):
        s.update({f"{e}.mlp.0.weight": (h, F_), f"{e}.mlp.0.bias": (h,), f"{e}.mlp.2.weight": (h, h),
                  f"{e}.mlp.2.bias": (h,)})
    if c["num_classes"] > 0:
        s["y_embedder.embedding_table.weight"] = (c["num_classes"] + (1 if c["class_dropout_prob"] > 0 else 0), h)
    for i in range(c["depth"]):
        s.update({f"blocks.{i}.attn.qkv.weight": (3 * h, h), f"blocks.{i}.attn.qkv.bias": (3 * h,),
                  f"blocks.{i}.attn.proj.weight": (h, h), f"blocks.{i}.attn.proj.bias": (h,),
                  f"blocks.{i}.mlp.fc1.weight": (mlp, h), f"blocks.{i}.mlp.fc1.bias": (mlp,),
                  f"blocks.{i}.mlp.fc2.weight": (h, mlp), f"blocks.{i}.mlp.fc2.bias": (h,),
                  f"blocks.{i}.adaLN_modulation.1.weight": (6 * h, h), f"blocks.{i}.adaLN_modulation.1.bias": (6 * h,)})
    s.update({"final_layer.adaLN_modulation.1.weight": (2 * h, h), "final_layer.adaLN_modulation.1.bias": (2 * h,),
              "final_layer.linear.weight": (p * p * C, h), "final_layer.linear.bias": (p * p * C,)})
    return s


def sincos_1d(dim, pos):
    omega = torch.arange(dim // 2, dtype=torch.float64) / (dim / 2.0)
    omega = 1.0 / 10000 ** omega
    out = pos.reshape(-1)[:, None] * omega[None]
    return torch.cat([torch.sin(out), torch.cos(out)], dim=1)


def sincos_2d(dim, grid_size):  # DiT's get_2d_sincos_pos_embed: meshgrid(w, h), the column's half first
    gh = torch.arange(grid_size, dtype=torch.float64)
    grid_w, grid_h = torch.meshgrid(gh, gh, indexing="xy")
    return torch.cat([sincos_1d(dim // 2, grid_w), sincos_1d(dim // 2, grid_h)], dim=1)


def timestep_embedding(t, dim, max_period=10000):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float64) / half)
    args = t[:, None].double() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


def modulate(x, shift, scale):
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


def dit(c, w, x, t, labels, r, dtype):
    h, p, H = c["hidden_size"], c["patch_size"], c["num_heads"]
    B, C, S, _ = x.shape
    g = S // p
    tokens = F.conv2d(x, w["x_embedder.proj.weight"], w["x_embedder.proj.bias"], stride=p)
    tokens = tokens.flatten(2).transpose(1, 2)  # (B, T, h)
    pos = w["pos_embed"] if c.get("learned_position_embedding") else sincos_2d(h, g).to(dtype)[None]
    tokens = tokens + pos

    def embed(e, time):
        f = timestep_embedding(time * c["time_scale"], c["frequency_embedding_size"]).to(dtype)
        f = F.silu(F.linear(f, w[f"{e}.mlp.0.weight"], w[f"{e}.mlp.0.bias"]))
        return F.linear(f, w[f"{e}.mlp.2.weight"], w[f"{e}.mlp.2.bias"])

    cond = embed("t_embedder", t)
    if r is not None:
        cond = cond + embed("r_embedder", t - r)
    if c["num_classes"] > 0:
        cond = cond + w["y_embedder.embedding_table.weight"][labels]
    ca = F.silu(cond)
    for i in range(c["depth"]):
        b = lambda n: w[f"blocks.{i}.{n}"]  # noqa: E731
        m = F.linear(ca, b("adaLN_modulation.1.weight"), b("adaLN_modulation.1.bias")).chunk(6, dim=1)
        a = modulate(F.layer_norm(tokens, (h,), eps=1e-6), m[0], m[1])
        qkv = F.linear(a, b("attn.qkv.weight"), b("attn.qkv.bias")).reshape(B, g * g, 3, H, h // H).permute(2, 0, 3, 1, 4)
        att = torch.softmax(qkv[0] @ qkv[1].transpose(-2, -1) / math.sqrt(h // H), dim=-1) @ qkv[2]
        att = att.transpose(1, 2).reshape(B, g * g, h)
        tokens = tokens + m[2].unsqueeze(1) * F.linear(att, b("attn.proj.weight"), b("attn.proj.bias"))
        a = modulate(F.layer_norm(tokens, (h,), eps=1e-6), m[3], m[4])
        hidden = F.gelu(F.linear(a, b("mlp.fc1.weight"), b("mlp.fc1.bias")), approximate="tanh")
        tokens = tokens + m[5].unsqueeze(1) * F.linear(hidden, b("mlp.fc2.weight"), b("mlp.fc2.bias"))
    shift, scale = F.linear(ca, w["final_layer.adaLN_modulation.1.weight"],
                            w["final_layer.adaLN_modulation.1.bias"]).chunk(2, dim=1)
    out = F.linear(modulate(F.layer_norm(tokens, (h,), eps=1e-6), shift, scale), w["final_layer.linear.weight"],
                   w["final_layer.linear.bias"])
    out = out.reshape(B, g, g, C, p, p)  # per patch (c, i, j), channel-major
    return torch.einsum("nhwcpq->nchpwq", out).reshape(B, C, S, S)


GRADIENTS = ["x_embedder.proj.weight", "t_embedder.mlp.0.weight", "blocks.0.attn.qkv.weight",
             "blocks.1.adaLN_modulation.1.weight", "blocks.1.mlp.fc1.bias", "final_layer.linear.weight"]


def main():
    for index, (name, c) in enumerate(CONFIGS.items()):
        labels = torch.tensor([0, c["num_classes"], 1]) if c["num_classes"] > 0 else None  # the null class too
        write_image_fixture(os.path.join(OUT, name), c, parameter_shapes(c),
                            lambda w, x, t, y, r, dtype: dit(c, w, x, t, y, r, dtype), 300 + index,
                            (3, c["in_channels"], c["image_size"], c["image_size"]), c["in_channels"], labels,
                            c.get("time_inputs", 1) == 2, GRADIENTS)
        print(name, "written")


if __name__ == "__main__":
    main()
