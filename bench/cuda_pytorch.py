#!/usr/bin/env python3
"""PyTorch on the shapes of `dew bench cuda`, timed the same way (CUDA events, median after a warm-up):
torch.matmul (f32 without TF32), scaled_dot_product_attention with its flash and cuDNN backends
(forward, and backward alone) with their accuracy against f64, and the memory-bound ops. A table for people, one JSON line last."""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F


def median_ms(reps, f):
    f()
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        f()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def uniform(shape, dtype, requires_grad=False):
    return (torch.rand(shape, device="cuda", dtype=torch.float32) * 2 - 1).to(dtype).requires_grad_(requires_grad)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("cuda_pytorch.py: no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rows = []

    def row(family, name, ms, rate, unit):
        rows.append({"family": family, "case": name, "ms": ms, "rate": rate, "unit": unit})
        print(f"{family:<10} {name:<48} {ms:>10.3f} {rate:>10.1f} {unit}")

    n = 2 << 30
    a, b = torch.zeros(n, dtype=torch.uint8, device="cuda"), torch.empty(n, dtype=torch.uint8, device="cuda")
    copy_ms = median_ms(args.reps, lambda: b.copy_(a))
    copy = 2 * n / (copy_ms * 1e-3) * 1e-9
    del a, b
    print(f"device: {torch.cuda.get_device_name(0)}; torch {torch.__version__}; copy {copy:.0f} GB/s")

    def gemm(dtype, M, N, K):
        x, y = uniform((M, K), dtype), uniform((K, N), dtype)
        ms = median_ms(args.reps, lambda: torch.matmul(x, y))
        name = f"{str(dtype).replace('torch.', '').replace('bfloat16', 'bf16').replace('float32', 'f32')} {M}x{N}x{K}"
        row("gemm", name, ms, 2 * M * N * K / (ms * 1e-3) * 1e-12, "TFLOP/s")

    gemm(torch.bfloat16, 8192, 8192, 8192)
    shapes = [(4096, 4096, 4096)] if args.quick else [
        (4096, 4096, 4096), (8192, 2304, 768), (8192, 768, 768), (8192, 3072, 768), (8192, 768, 3072),
        (4096, 14336, 4096), (4096, 4096, 14336)]
    for dtype in (torch.bfloat16, torch.float32):
        for M, N, K in shapes:
            gemm(dtype, M, N, K)

    from torch.nn.attention import SDPBackend, sdpa_kernel
    for D in (64, 128):
        for T in ([1024] if args.quick else [1024, 2048, 4096, 8192]):
            B, H = max(1, 16384 // T), 2048 // D
            q, k, v = (uniform((B, H, T, D), torch.bfloat16, True) for _ in range(3))
            dout = uniform((B, H, T, D), torch.bfloat16)
            flops = 4 * B * H * T * T * D / 2
            for backend, label in ((SDPBackend.FLASH_ATTENTION, "flash"), (SDPBackend.CUDNN_ATTENTION, "cudnn")):
                try:
                    with sdpa_kernel(backend):
                        fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
                        f_ms = median_ms(args.reps, fwd)
                        out = fwd()
                        b_ms = median_ms(args.reps, lambda: torch.autograd.grad(out, (q, k, v), dout, retain_graph=True))
                except RuntimeError as e:  # a backend this build or card lacks
                    print(f"attention  {label} T={T} D={D}: unavailable ({str(e).splitlines()[0]})")
                    continue
                row("attention", f"fwd bf16 causal T={T} D={D} B={B} H={H} {label}", f_ms,
                    flops / (f_ms * 1e-3) * 1e-12, "TFLOP/s")
                row("attention", f"bwd bf16 causal T={T} D={D} B={B} H={H} {label}", b_ms,
                    2.5 * flops / (b_ms * 1e-3) * 1e-12, "TFLOP/s")

    # Accuracy on one causal case (B 1, H 4, T 1024, D 128) against the f64 math backend on the same
    # inputs: each output's RMS error over that of the truth rounded to bf16 (dew bench cuda: the same).
    q, k, v = (uniform((1, 4, 1024, 128), torch.bfloat16, True) for _ in range(3))
    dout = uniform((1, 4, 1024, 128), torch.bfloat16)
    wide = [t.detach().double().requires_grad_(True) for t in (q, k, v)]
    with sdpa_kernel(SDPBackend.MATH):
        truth = F.scaled_dot_product_attention(*wide, is_causal=True)
        truth_grads = torch.autograd.grad(truth, wide, dout.double())
    rms = lambda a, b: (a.double() - b).pow(2).mean().sqrt().item()
    for backend, label in ((SDPBackend.FLASH_ATTENTION, "flash"), (SDPBackend.CUDNN_ATTENTION, "cudnn")):
        try:
            with sdpa_kernel(backend):
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                grads = torch.autograd.grad(out, (q, k, v), dout)
        except RuntimeError as e:
            print(f"accuracy   {label}: unavailable ({str(e).splitlines()[0]})")
            continue
        for what, got, want in zip(("out", "dq", "dk", "dv"), (out, *grads), (truth, *truth_grads)):
            row("accuracy", f"attention {what} bf16 causal T=1024 D=128 {label}", 0,
                rms(got, want) / rms(want.bfloat16(), want), "x bf16 rounding")

    R, C = (8192, 4096) if args.quick else (65536, 4096)
    x, y, w = uniform((R, C), torch.bfloat16), uniform((R, C), torch.bfloat16), uniform((C,), torch.bfloat16)
    nbytes = R * C * 2
    for name, moved, f in (
            (f"add bf16 {R}x{C}", 3 * nbytes, lambda: x + y),
            (f"rms_norm bf16 {R}x{C}", 2 * nbytes, lambda: F.rms_norm(x, (C,), w, 1e-6)),
            (f"softmax bf16 {R}x{C}", 2 * nbytes, lambda: torch.softmax(x, -1)),
            (f"swiglu bf16 {R}x{C}", 3 * nbytes, lambda: F.silu(x) * y)):
        ms = median_ms(args.reps, f)
        row("memory", name, ms, moved / (ms * 1e-3) * 1e-9, "GB/s")
    N, V = (1024, 50304) if args.quick else (8192, 50304)
    logits = uniform((N, V), torch.bfloat16, True)
    targets = torch.randint(0, V, (N,), device="cuda")
    ce = lambda: torch.autograd.grad(F.cross_entropy(logits.float(), targets), logits)
    ms = median_ms(args.reps, ce)
    row("memory", f"cross_entropy bf16 {N}x{V} (loss+grad)", ms, 2 * N * V * 2 / (ms * 1e-3) * 1e-9, "GB/s")
    print(json.dumps({"bench": "cuda_pytorch", "torch": torch.__version__, "copy_gb_s": round(copy, 1), "rows": rows}))


if __name__ == "__main__":
    main()
