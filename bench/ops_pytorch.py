#!/usr/bin/python3
"""Dew's memory-bound ops against PyTorch's on the same shapes, alternating in one script (the method of
docs/perf.md). Each round runs `dew bench ops --op OP --dtype D --impl IMPL` (a subprocess;
its median and its bytes) and then PyTorch's eager equivalent (the same shape, dtype and value range,
2 threads), so both see the same minutes of the host. Bytes are Dew's count (inputs + outputs), so the
two GB/s figures share one numerator.

PyTorch runs at its best (jemalloc preloaded with freed memory kept, OMP_WAIT_POLICY=PASSIVE) and on
the same instruction set as Dew's tier (ATEN_CPU_CAPABILITY=avx512 for cpu.avx512, avx2 for cpu.avx2:
PyTorch's own default is avx2 even where the CPU has AVX-512, and its AVX-512 kernels are faster for
some ops, log and the GELUs among them): the script re-executes itself so with Debian's python3-torch.

Usage: bench/ops_pytorch.py DEW_BINARY [--impl cpu.avx512] [--rounds 3] [--reps 5] [OP:DTYPE ...]
Prints a table, then one JSON line with every round's figures.
"""
import json
import os
import subprocess
import sys
import time

JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
_impl = sys.argv[sys.argv.index("--impl") + 1] if "--impl" in sys.argv[:-1] else "cpu.avx512"
CAPABILITY = "avx512" if "avx512" in _impl else "avx2" if "avx2" in _impl else "default"
if os.path.exists(JEMALLOC) and os.environ.get("LD_PRELOAD") != JEMALLOC:
    env = dict(os.environ, LD_PRELOAD=JEMALLOC, OMP_WAIT_POLICY="PASSIVE",
               MALLOC_CONF="background_thread:true,dirty_decay_ms:-1,muzzy_decay_ms:-1")
    env.setdefault("ATEN_CPU_CAPABILITY", CAPABILITY)
    os.execve(sys.executable, [sys.executable] + sys.argv, env)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

# The shapes of the ops' "bench" cases (src/ops/*/*.cc): unary gpt2_mlp, glu llama8b_mlp, cross_entropy gpt2_vocab.
UNARY = {"exp": torch.exp, "log": torch.log, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "silu": F.silu,
         "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh")}
GLU = {"swiglu": ("silu", None), "geglu": ("gelu", "none"), "geglu_tanh": ("gelu", "tanh")}


def torch_call(op, dtype):
    """The op as PyTorch computes it eagerly, and its inputs (drawn as Dew's cases draw theirs)."""
    gen = torch.Generator().manual_seed(0)
    dt = {"f32": torch.float32, "bf16": torch.bfloat16}[dtype]
    draw = lambda shape, scale: (torch.randn(shape, generator=gen) * scale).to(dt)  # noqa: E731
    if op in UNARY:
        x = draw((4096, 3072), 2.0)
        x = x.abs() if op == "log" else x
        return lambda: UNARY[op](x)
    base = op.removesuffix("_backward")
    if base in GLU:
        kind, approximate = GLU[base]
        g, u, dy = draw((512, 14336), 3.0), draw((512, 14336), 1.0), draw((512, 14336), 1.0)
        act = F.silu if kind == "silu" else (lambda t: F.gelu(t, approximate=approximate))
        if base == op:
            return lambda: act(g) * u
        # Autograd's own decomposition of act(g) * u: the activation's backward op and one product.
        if kind == "silu":
            return lambda: (torch.ops.aten.silu_backward(dy * u, g), dy * act(g))
        return lambda: (torch.ops.aten.gelu_backward(dy * u, g, approximate=approximate), dy * act(g))
    if op == "cross_entropy":  # loss and d_logits, as Dew's one pass returns them
        logits = draw((1024, 50257), 2.0).requires_grad_()
        targets = torch.randint(0, 50257, (1024,), generator=gen)

        def step():
            logits.grad = None
            F.cross_entropy(logits, targets).backward()
        return step
    raise SystemExit(f"ops_pytorch.py: no PyTorch equivalent for {op} (expected one of "
                     f"{sorted(UNARY) + sorted(GLU) + [g + '_backward' for g in GLU] + ['cross_entropy']})")


def torch_median_s(call, reps):
    call()  # warm-up: first touches and PyTorch's allocator
    seconds = []
    for _ in range(reps):
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return sorted(seconds)[len(seconds) // 2]


def dew_row(binary, op, dtype, impl, reps):
    out = subprocess.run([binary, "bench", "ops", "--op", op, "--dtype", dtype, "--impl", impl, "--reps", str(reps)],
                         check=True, capture_output=True, text=True).stdout
    report = json.loads(out.strip().splitlines()[-1])
    row = report["rows"][0]
    seconds = row["median_ms"] * 1e-3
    return seconds, row["rate"] * 1e9 * seconds, report["triad_gb_s"]


def main(argv):
    args, impl, rounds, reps, pairs = argv[1:], "cpu.avx512", 3, 5, []
    if not args or args[0].startswith("-"):
        raise SystemExit(__doc__)
    binary = args.pop(0)
    while args:
        a = args.pop(0)
        if a in ("--impl", "--rounds", "--reps"):
            value = args.pop(0)
            impl, rounds, reps = (value, rounds, reps) if a == "--impl" else \
                (impl, int(value), reps) if a == "--rounds" else (impl, rounds, int(value))
        else:
            op, _, dtype = a.partition(":")
            pairs.append((op, dtype or "f32"))
    torch.set_num_threads(2)
    rows = []
    capability = os.environ.get("ATEN_CPU_CAPABILITY", "default")
    print(f"torch {torch.__version__} (ATEN_CPU_CAPABILITY={capability}), 2 threads; Dew {impl}; "
          f"{rounds} rounds of {reps} reps, alternating")
    print(f"{'op':<20} {'dtype':<5} {'Dew GB/s':>16} {'torch GB/s':>16} {'Dew/torch':>10} {'Dew of triad':>13}")
    for op, dtype in pairs:
        call = torch_call(op, dtype)
        dew_s, torch_s, triads, nbytes = [], [], [], 0.0
        for _ in range(rounds):
            s, nbytes, triad = dew_row(binary, op, dtype, impl, reps)
            dew_s.append(s)
            triads.append(triad)
            torch_s.append(torch_median_s(call, reps))
        span = lambda ss: f"{nbytes / max(ss) * 1e-9:5.1f}-{nbytes / min(ss) * 1e-9:5.1f}"  # noqa: E731
        ratio = sorted(t / d for d, t in zip(dew_s, torch_s))
        triad_pct = sorted(nbytes / d * 1e-9 / t * 100 for d, t in zip(dew_s, triads))
        print(f"{op:<20} {dtype:<5} {span(dew_s):>16} {span(torch_s):>16} {ratio[len(ratio) // 2]:>9.2f}x"
              f" {triad_pct[0]:>5.0f}-{triad_pct[-1]:.0f}%")
        rows.append({"op": op, "dtype": dtype, "bytes": nbytes, "dew_s": dew_s, "torch_s": torch_s, "triad_gb_s": triads})
    print(json.dumps({"bench": "ops_pytorch", "torch": torch.__version__, "capability": capability, "impl": impl,
                      "rows": rows}))


if __name__ == "__main__":
    main(sys.argv)
