#!/usr/bin/python3
"""grouped_matmul against PyTorch on the bench cases mixtral_small_up (src/ops/grouped_matmul/
grouped_matmul.cc: 1,024 rows routed to 8 experts with loads 200, 96, 160, 40, 176, 120, 152, 80; K 512;
each expert's weight (1408, 512) as nn.Linear stores it) and qwen3_moe_small_up (2,052 rows over 64
experts, 0 to 64 each; K 1024, N 384), alternating in one script (docs/perf.md's
method). Each round runs `dew bench ops --op grouped_matmul --impl IMPL --dtype D` (a subprocess; its
median) and then, at PyTorch's best (jemalloc, OMP_WAIT_POLICY=PASSIVE, 2 threads), the per-expert loop
a Mixtral layer runs (F.linear of each expert's rows, into one output) and one dense F.linear of the same
FLOPs (1,024 rows against one (1408, 512) weight): the loop is what users run today, the dense product
the ceiling the grouped one aims at.

Usage: bench/grouped_matmul_pytorch.py DEW_BINARY [--case mixtral_small_up] [--impl cpu.avx512.tiles]
       [--dtype f32] [--rounds 3]
Prints one line per round, then one JSON line.
"""
import json
import os
import statistics
import subprocess
import sys
import time

JEMALLOC = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
if os.path.exists(JEMALLOC) and os.environ.get("LD_PRELOAD") != JEMALLOC:
    env = dict(os.environ, LD_PRELOAD=JEMALLOC, OMP_WAIT_POLICY="PASSIVE",
               MALLOC_CONF="background_thread:true,dirty_decay_ms:-1,muzzy_decay_ms:-1")
    os.execve(sys.executable, [sys.executable] + sys.argv, env)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def arg(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv[:-1] else default


# The bench cases of src/ops/grouped_matmul/grouped_matmul.cc: each expert's rows, K and N.
CASES = {"mixtral_small_up": ([200, 96, 160, 40, 176, 120, 152, 80], 512, 1408),
         "qwen3_moe_small_up": ([(e * 37) % 65 for e in range(64)], 1024, 384)}


def median_ms(fn, reps=20):
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def main():
    dew, impl, dtype, rounds = sys.argv[1], arg("--impl", "cpu.avx512.tiles"), arg("--dtype", "f32"), int(
        arg("--rounds", "3"))
    case = arg("--case", "mixtral_small_up")
    LOADS, K, N = CASES[case]
    FLOPS = 2.0 * sum(LOADS) * K * N
    torch.set_num_threads(2)
    dt = {"f32": torch.float32, "bf16": torch.bfloat16}[dtype]
    gen = torch.Generator().manual_seed(0)
    x = torch.randn((sum(LOADS), K), generator=gen).to(dt)
    w = torch.randn((len(LOADS), N, K), generator=gen).to(dt)
    starts = [sum(LOADS[:g]) for g in range(len(LOADS))]
    out = torch.empty((sum(LOADS), N), dtype=dt)

    def loop():
        for g, (s, n) in enumerate(zip(starts, LOADS)):
            out[s:s + n] = F.linear(x[s:s + n], w[g])

    rows = []
    for r in range(rounds):
        run = subprocess.run([dew, "bench", "ops", "--op", "grouped_matmul", "--impl", impl, "--dtype", dtype],
                             capture_output=True, text=True, check=True)
        line = json.loads(run.stdout.strip().splitlines()[-1])
        dew_ms = next(row["median_ms"] for row in line["rows"] if row["case"] == case)
        loop_ms, dense_ms = median_ms(loop), median_ms(lambda: F.linear(x, w[0]))
        rows.append({"dew_ms": dew_ms, "torch_loop_ms": loop_ms, "torch_dense_ms": dense_ms})
        print(f"round {r + 1}: Dew {impl} {dew_ms:.3f} ms ({FLOPS / dew_ms / 1e6:.1f} GFLOP/s), PyTorch loop "
              f"{loop_ms:.3f} ms ({FLOPS / loop_ms / 1e6:.1f}), PyTorch dense {dense_ms:.3f} ms "
              f"({FLOPS / dense_ms / 1e6:.1f})")
    print(json.dumps({"bench": "grouped_matmul_pytorch", "case": case, "impl": impl, "dtype": dtype,
                      "torch": torch.__version__, "rounds": rows}))


if __name__ == "__main__":
    main()
