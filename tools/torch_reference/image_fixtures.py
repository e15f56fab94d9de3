"""The fixture every image backbone's script writes the same way (make_dit_fixtures.py,
make_unet_fixtures.py): a random bf16 checkpoint with its config.json, and torch_outputs.safetensors with
the inputs, the float32 and float64 outputs, the gradients of <output, cotangent> for the named
parameters and the images, and the output's tangent along (images, times) directions."""
import json
import os

import torch

from make_fixtures import write_safetensors


def write_image_fixture(directory, config, shapes, forward, seed, image_shape, out_channels, labels, two_times,
                        gradients):
    """forward(weights, images, times, labels, r, dtype) -> outputs; image_shape (B, C, S, S)."""
    os.makedirs(directory, exist_ok=True)
    generator = torch.Generator().manual_seed(seed)
    weights = {n: (torch.randn(s, generator=generator, dtype=torch.float64) * 0.3).to(torch.bfloat16)
               for n, s in shapes.items()}
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    write_safetensors(os.path.join(directory, "model.safetensors"), weights)

    B, _, S, _ = image_shape
    images = torch.randn(image_shape, generator=generator, dtype=torch.float64)
    times = torch.rand((B,), generator=generator, dtype=torch.float64)
    r = times * torch.rand((B,), generator=generator, dtype=torch.float64) if two_times else None
    cotangent = torch.randn((B, out_channels, S, S), generator=generator, dtype=torch.float64)
    image_tangent = torch.randn(image_shape, generator=generator, dtype=torch.float64)
    time_tangent = torch.rand((B,), generator=generator, dtype=torch.float64)
    out = {"images": images, "times": times, "cotangent": cotangent, "image_tangent": image_tangent,
           "time_tangent": time_tangent}
    if labels is not None:
        out["labels"] = labels
    if r is not None:
        out["r"] = r
    names = [n for n in gradients if n in weights]
    for dtype, tag in [(torch.float32, "f32"), (torch.float64, "f64")]:
        w = {k: v.to(dtype).requires_grad_(k in names) for k, v in weights.items()}
        x = images.to(dtype).requires_grad_()
        rr = r.to(dtype) if r is not None else None
        y = forward(w, x, times.to(dtype), labels, rr, dtype)
        out[f"output_{tag}"] = y.detach()
        grads = torch.autograd.grad((y * cotangent.to(dtype)).sum(), [w[n] for n in names] + [x])
        for n, g in zip(names, grads):
            out[f"grad_{tag}.{n}"] = g
        out[f"grad_{tag}.images"] = grads[-1]
        frozen = {k: v.detach() for k, v in w.items()}
        _, tangent = torch.autograd.functional.jvp(
            lambda xi, ti: forward(frozen, xi, ti, labels, rr, dtype),
            (images.to(dtype), times.to(dtype)), (image_tangent.to(dtype), time_tangent.to(dtype)))
        out[f"tangent_{tag}"] = tangent
    write_safetensors(os.path.join(directory, "torch_outputs.safetensors"),
                      {k: v.detach().contiguous() for k, v in out.items()})
