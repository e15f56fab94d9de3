#!/usr/bin/python3
"""Writes tests/models/torch_fixtures/<name>/ for Dew's UNet: a small random checkpoint (config.json,
model.safetensors in bf16) and torch_outputs.safetensors: inputs (images, times, labels, r), the outputs
of a plain PyTorch UNet in float32 and float64, the gradients of <output, cotangent> for a few
parameters and the images, and the output's tangent along (images, times) directions (forward mode).
The UNet here is written from diffusers' UNet2DModel (unet_2d.py, unet_2d_blocks.py, resnet.py,
attention_processor.py, embeddings.py's get_timestep_embedding) with its parameter names; Dew's own
keys (num_classes with a null row, time_scale, time_inputs with an r_embedding) as Dew documents them.

Run with Debian's PyTorch: apt-get install python3-torch && /usr/bin/python3 tools/torch_reference/make_unet_fixtures.py
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from image_fixtures import write_image_fixture  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "models", "torch_fixtures")

CONFIGS = {
    # classes with the null row, attention at the lower level and in the middle, times as a flow model's
    "unet": {"model_type": "unet", "sample_size": 8, "in_channels": 2, "out_channels": 2,
             "block_out_channels": [8, 16], "down_block_types": ["DownBlock2D", "AttnDownBlock2D"],
             "up_block_types": ["AttnUpBlock2D", "UpBlock2D"], "layers_per_block": 1, "norm_num_groups": 4,
             "attention_head_dim": 4, "num_classes": 3, "class_dropout_prob": 0.1, "time_scale": 1000.0},
    # a diffusers config as written: sin before cos, shifted frequencies, one attention head, no classes
    "unet_diffusers": {"_class_name": "UNet2DModel", "_diffusers_version": "0.21.0", "sample_size": 8,
                       "in_channels": 1, "out_channels": 1, "block_out_channels": [4, 8, 8],
                       "down_block_types": ["DownBlock2D", "AttnDownBlock2D", "DownBlock2D"],
                       "up_block_types": ["UpBlock2D", "AttnUpBlock2D", "UpBlock2D"], "layers_per_block": 2,
                       "norm_num_groups": 2, "attention_head_dim": None, "flip_sin_to_cos": False,
                       "freq_shift": 1, "norm_eps": 1e-6, "act_fn": "silu", "center_input_sample": False,
                       "time_embedding_type": "positional", "resnet_time_scale_shift": "default",
                       "add_attention": True, "downsample_padding": 1, "mid_block_scale_factor": 1,
                       "dropout": 0.0, "class_embed_type": None, "num_class_embeds": None},
    # MeanFlow's two times, no middle attention
    "unet_meanflow": {"model_type": "unet", "sample_size": 4, "in_channels": 1, "out_channels": 1,
                      "block_out_channels": [4, 8], "down_block_types": ["AttnDownBlock2D", "DownBlock2D"],
                      "up_block_types": ["UpBlock2D", "AttnUpBlock2D"], "layers_per_block": 1,
                      "norm_num_groups": 2, "attention_head_dim": 2, "add_attention": False,
                      "num_classes": 0, "time_scale": 1000.0, "time_inputs": 2},
}


def settings(c):
    return {"levels": len(c["block_out_channels"]), "layers": c.get("layers_per_block", 2),
            "groups": c.get("norm_num_groups", 32), "eps": c.get("norm_eps", 1e-5),
            "head_dim": c.get("attention_head_dim", 8), "flip": c.get("flip_sin_to_cos", True),
            "shift": c.get("freq_shift", 0), "classes": c.get("num_classes", c.get("num_class_embeds") or 0),
            "scale": c.get("time_scale", 1.0), "two_times": c.get("time_inputs", 1) == 2,
            "mid_attention": c.get("add_attention", True)}


def parameter_shapes(c):
    s, C0 = {}, c["block_out_channels"][0]
    E, st = 4 * C0, settings(c)

    def conv(n, i, o, k):
        s[n + ".weight"], s[n + ".bias"] = (o, i, k, k), (o,)

    def lin(n, i, o):
        s[n + ".weight"], s[n + ".bias"] = (o, i), (o,)

    def norm(n, ch):
        s[n + ".weight"], s[n + ".bias"] = (ch,), (ch,)

    def resnet(n, i, o):
        norm(n + ".norm1", i); conv(n + ".conv1", i, o, 3); lin(n + ".time_emb_proj", E, o)
        norm(n + ".norm2", o); conv(n + ".conv2", o, o, 3)
        if i != o:
            conv(n + ".conv_shortcut", i, o, 1)

    def attention(n, ch):
        norm(n + ".group_norm", ch)
        for p in ["to_q", "to_k", "to_v", "to_out.0"]:
            lin(f"{n}.{p}", ch, ch)

    conv("conv_in", c["in_channels"], C0, 3)
    lin("time_embedding.linear_1", C0, E); lin("time_embedding.linear_2", E, E)
    if st["two_times"]:
        lin("r_embedding.linear_1", C0, E); lin("r_embedding.linear_2", E, E)
    if st["classes"]:
        s["class_embedding.weight"] = (st["classes"] + (1 if c.get("class_dropout_prob", 0) > 0 else 0), E)
    output_channel = C0
    for i, kind in enumerate(c["down_block_types"]):  # diffusers' UNet2DModel.__init__
        input_channel, output_channel = output_channel, c["block_out_channels"][i]
        for j in range(st["layers"]):
            resnet(f"down_blocks.{i}.resnets.{j}", input_channel if j == 0 else output_channel, output_channel)
            if kind == "AttnDownBlock2D":
                attention(f"down_blocks.{i}.attentions.{j}", output_channel)
        if i < st["levels"] - 1:
            conv(f"down_blocks.{i}.downsamplers.0.conv", output_channel, output_channel, 3)
    last = c["block_out_channels"][-1]
    resnet("mid_block.resnets.0", last, last)
    if st["mid_attention"]:
        attention("mid_block.attentions.0", last)
    resnet("mid_block.resnets.1", last, last)
    rev = list(reversed(c["block_out_channels"]))
    output_channel = rev[0]
    for i, kind in enumerate(c["up_block_types"]):
        prev, output_channel = output_channel, rev[i]
        input_channel = rev[min(i + 1, st["levels"] - 1)]
        for j in range(st["layers"] + 1):
            skip = input_channel if j == st["layers"] else output_channel
            resnet(f"up_blocks.{i}.resnets.{j}", (prev if j == 0 else output_channel) + skip, output_channel)
            if kind == "AttnUpBlock2D":
                attention(f"up_blocks.{i}.attentions.{j}", output_channel)
        if i < st["levels"] - 1:
            conv(f"up_blocks.{i}.upsamplers.0.conv", output_channel, output_channel, 3)
    norm("conv_norm_out", C0)
    conv("conv_out", C0, c["out_channels"], 3)
    return s


def timestep_embedding(t, dim, flip, shift):  # diffusers' get_timestep_embedding
    half = dim // 2
    exponent = -math.log(10000) * torch.arange(half, dtype=torch.float64) / (half - shift)
    emb = t[:, None].double() * torch.exp(exponent)[None]
    emb = torch.cat([torch.sin(emb), torch.cos(emb)], dim=-1)
    return torch.cat([emb[:, half:], emb[:, :half]], dim=-1) if flip else emb


def unet(c, w, x, t, labels, r, dtype):
    st = settings(c)
    gn = lambda n, h: F.group_norm(h, st["groups"], w[n + ".weight"], w[n + ".bias"], st["eps"])  # noqa: E731
    cv = lambda n, h, **k: F.conv2d(h, w[n + ".weight"], w[n + ".bias"], **k)  # noqa: E731

    def embed(n, time):
        f = timestep_embedding(time * st["scale"], c["block_out_channels"][0], st["flip"], st["shift"]).to(dtype)
        f = F.silu(F.linear(f, w[n + ".linear_1.weight"], w[n + ".linear_1.bias"]))
        return F.linear(f, w[n + ".linear_2.weight"], w[n + ".linear_2.bias"])

    emb = embed("time_embedding", t)
    if r is not None:
        emb = emb + embed("r_embedding", t - r)
    if labels is not None:
        emb = emb + w["class_embedding.weight"][labels]

    def resnet(n, h):
        y = cv(n + ".conv1", F.silu(gn(n + ".norm1", h)), padding=1)
        y = y + F.linear(F.silu(emb), w[n + ".time_emb_proj.weight"], w[n + ".time_emb_proj.bias"])[:, :, None, None]
        y = cv(n + ".conv2", F.silu(gn(n + ".norm2", y)), padding=1)
        if n + ".conv_shortcut.weight" in w:
            h = cv(n + ".conv_shortcut", h)
        return h + y

    def attention(n, h):
        B, C, H, W = h.shape
        d = st["head_dim"] or C
        a = gn(n + ".group_norm", h).view(B, C, H * W).transpose(1, 2)
        q, k, v = (F.linear(a, w[f"{n}.{p}.weight"], w[f"{n}.{p}.bias"]).view(B, H * W, C // d, d).transpose(1, 2)
                   for p in ["to_q", "to_k", "to_v"])
        o = (torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1) @ v).transpose(1, 2).reshape(B, H * W, C)
        o = F.linear(o, w[n + ".to_out.0.weight"], w[n + ".to_out.0.bias"])
        return o.transpose(1, 2).reshape(B, C, H, W) + h

    h = cv("conv_in", x, padding=1)
    skips = [h]
    for i, kind in enumerate(c["down_block_types"]):
        for j in range(st["layers"]):
            h = resnet(f"down_blocks.{i}.resnets.{j}", h)
            if kind == "AttnDownBlock2D":
                h = attention(f"down_blocks.{i}.attentions.{j}", h)
            skips.append(h)
        if i < st["levels"] - 1:
            h = cv(f"down_blocks.{i}.downsamplers.0.conv", h, stride=2, padding=1)
            skips.append(h)
    h = resnet("mid_block.resnets.0", h)
    if st["mid_attention"]:
        h = attention("mid_block.attentions.0", h)
    h = resnet("mid_block.resnets.1", h)
    for i, kind in enumerate(c["up_block_types"]):
        for j in range(st["layers"] + 1):
            h = resnet(f"up_blocks.{i}.resnets.{j}", torch.cat([h, skips.pop()], dim=1))
            if kind == "AttnUpBlock2D":
                h = attention(f"up_blocks.{i}.attentions.{j}", h)
        if i < st["levels"] - 1:
            h = cv(f"up_blocks.{i}.upsamplers.0.conv", F.interpolate(h, scale_factor=2.0, mode="nearest"), padding=1)
    return cv("conv_out", F.silu(gn("conv_norm_out", h)), padding=1)


GRADIENTS = ["conv_in.weight", "time_embedding.linear_1.weight", "down_blocks.0.resnets.0.conv1.weight",
             "down_blocks.1.attentions.0.to_q.weight", "mid_block.resnets.1.norm2.weight",
             "up_blocks.0.resnets.0.conv_shortcut.weight", "up_blocks.1.resnets.1.time_emb_proj.bias",
             "conv_out.weight"]


def main():
    for index, (name, c) in enumerate(CONFIGS.items()):
        st = settings(c)
        labels = torch.tensor([0, st["classes"], 1]) if c.get("class_dropout_prob", 0) > 0 else None
        write_image_fixture(os.path.join(OUT, name), c, parameter_shapes(c),
                            lambda w, x, t, y, r, dtype: unet(c, w, x, t, y, r, dtype), 500 + index,
                            (3, c["in_channels"], c["sample_size"], c["sample_size"]), c["out_channels"], labels,
                            st["two_times"], GRADIENTS)
        print(name, "written")


if __name__ == "__main__":
    main()
