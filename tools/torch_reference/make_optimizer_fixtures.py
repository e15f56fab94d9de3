#!/usr/bin/python3
"""Writes tests/train/fixtures/optimizers.safetensors: three parameters and four steps of gradients,
and what torch.optim.AdamW and torch.optim.SGD (momentum, and Nesterov) make of them under a changing
learning rate, in float32 and float64; and torch.nn.utils.clip_grad_norm_ on the first gradients.
Dew's tests run the same updates (tests/train/optimizer_test.cc) and are judged as the float64 gate
judges: Dew's float32 error against PyTorch's float64 result within 1.5x PyTorch's own float32 error.

Run with Debian's PyTorch: /usr/bin/python3 tools/torch_reference/make_optimizer_fixtures.py
"""
import json
import os
import struct

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "train", "fixtures")
SHAPES = {"w": (7, 5), "b": (5,), "e": (3, 4)}
LRS = [1e-2, 3e-2, 2e-2, 5e-3]
STEPS = len(LRS)


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        data = t.contiguous().numpy().tobytes()
        header[name] = {"dtype": {torch.float32: "F32", torch.float64: "F64"}[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, sort_keys=True).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def run(make, dtype, params, grads):
    ps = [params[n].to(dtype).clone().requires_grad_(True) for n in SHAPES]
    opt = make(ps)
    out = {}
    for step in range(STEPS):
        for group in opt.param_groups:
            group["lr"] = LRS[step]
        for p, n in zip(ps, SHAPES):
            p.grad = grads[step][n].to(dtype).clone()
        opt.step()
        for p, n in zip(ps, SHAPES):
            out[f"{n}.step{step}"] = p.detach().clone()
    return out


def main():
    torch.manual_seed(5)
    params = {n: torch.randn(s, dtype=torch.float64) for n, s in SHAPES.items()}
    grads = [{n: torch.randn(s, dtype=torch.float64) * (0.1 + step) for n, s in SHAPES.items()} for step in range(STEPS)]
    tensors = {f"param.{n}": t.float() for n, t in params.items()}
    for step, g in enumerate(grads):
        for n, t in g.items():
            tensors[f"grad{step}.{n}"] = t.float()
    # The inputs as float32 are what both sides start from; the float64 runs start from them too.
    params = {n: tensors[f"param.{n}"].double() for n in SHAPES}
    grads = [{n: tensors[f"grad{step}.{n}"].double() for n in SHAPES} for step in range(STEPS)]
    optimizers = {
        "adamw": lambda ps: torch.optim.AdamW(ps, lr=LRS[0], betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1),
        "sgd": lambda ps: torch.optim.SGD(ps, lr=LRS[0], momentum=0.9, weight_decay=0.01),
        "nesterov": lambda ps: torch.optim.SGD(ps, lr=LRS[0], momentum=0.9, nesterov=True, weight_decay=0.01),
    }
    for name, make in optimizers.items():
        for dtype, tag in ((torch.float32, "f32"), (torch.float64, "f64")):
            for key, t in run(make, dtype, params, grads).items():
                tensors[f"{name}.{tag}.{key}"] = t
    for dtype, tag in ((torch.float32, "f32"), (torch.float64, "f64")):
        ps = [params[n].to(dtype).clone().requires_grad_(True) for n in SHAPES]
        for p, n in zip(ps, SHAPES):
            p.grad = grads[0][n].to(dtype).clone() * 3
        norm = torch.nn.utils.clip_grad_norm_(ps, max_norm=1.0)
        tensors[f"clip.{tag}.norm"] = norm.reshape(1)
        for p, n in zip(ps, SHAPES):
            tensors[f"clip.{tag}.{n}"] = p.grad.clone()
    os.makedirs(OUT, exist_ok=True)
    write_safetensors(os.path.join(OUT, "optimizers.safetensors"), tensors)


if __name__ == "__main__":
    main()
