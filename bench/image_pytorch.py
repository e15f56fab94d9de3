#!/usr/bin/python3
"""PyTorch's side of the image-model training comparisons (docs/perf.md, "Training a DiT against
PyTorch", "Training a UNet against PyTorch"): the DiT or UNet of a Dew config's [model]
(bench/pytorch_dit.py, bench/pytorch_unet.py) trained by flow matching on random images in [-1, 1] with
random labels: the same batch, class dropout 0.1, AdamW (0.9/0.99, no weight decay), global-norm
clipping at 1.0, foreach AdamW; run it with jemalloc preloaded and OMP_WAIT_POLICY=PASSIVE
(bench/image_compare.sh does). With PRECISION bf16 the forward and loss run under
torch.autocast("cpu", dtype=torch.bfloat16); with LAYOUT channels_last the model and its inputs are
channels-last (oneDNN's preferred layout for convolutions).

Usage: image_pytorch.py CONFIG_TOML B STEPS THREADS PRECISION [LAYOUT]. Prints one JSON line: the seconds
of each step after two warm-up steps.
"""
import json
import os
import sys
import time
import tomllib

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_dit import DiT  # noqa: E402
from pytorch_unet import UNet  # noqa: E402


def main():
    with open(sys.argv[1], "rb") as f:
        config = tomllib.load(f)["model"]
    B, steps, threads, precision = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    channels_last = len(sys.argv) > 6 and sys.argv[6] == "channels_last"
    torch.set_num_threads(threads)
    # Subnormals flushed, as train_pytorch.py does: PyTorch at its best on Intel CPUs.
    torch.set_flush_denormal(True)
    torch.manual_seed(0)
    model = DiT(config) if config["model_type"] == "dit" else UNet(config)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, foreach=True)
    S = config.get("image_size", config.get("sample_size"))
    C, K = config.get("in_channels", 1), config["num_classes"]
    times = []
    for step in range(steps + 2):
        start = time.perf_counter()
        x0 = torch.rand(B, C, S, S) * 2 - 1
        y = torch.randint(0, K, (B,))
        y = torch.where(torch.rand(B) < 0.1, torch.full_like(y, K), y)
        t = torch.rand(B)
        eps = torch.randn_like(x0)
        xt = (1 - t)[:, None, None, None] * x0 + t[:, None, None, None] * eps
        if channels_last:
            xt = xt.contiguous(memory_format=torch.channels_last)
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
