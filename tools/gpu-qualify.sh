#!/usr/bin/env bash
# Qualifies the CUDA backend on a GPU machine in one run of at most 8 minutes (docs/cuda.md).
#
#   tools/gpu-qualify.sh pack   here: builds, then bundles the binaries and the shared libraries they
#                               need from Debian (the GPU machine has CUDA but none of them) into
#                               .gpu/bundle.tar.gz
#   tools/gpu-qualify.sh run    there (the device tool, carrying .gpu): dew check on every cuda.*
#                               implementation, the gpu tests, dew bench cuda and PyTorch on the same
#                               shapes (bench/cuda_pytorch.py), the GPT-2 124M and Qwen3-0.6B training
#                               steps beside PyTorch's (bench/train_pytorch_gpu.py); full logs
#                               under $OUT, a short table last.
#
# The GPU machine reads cuBLASLt from its own CUDA (dlopen at the first GPU matmul).
set -euo pipefail
cd "$(dirname "$0")/.."

pack() {
  cmake --build build --target dew dew_gpu_tests >/dev/null
  rm -rf .gpu && mkdir -p .gpu/bundle/bin .gpu/bundle/lib
  cp build/dew build/tests/dew_gpu_tests .gpu/bundle/bin/
  strip .gpu/bundle/bin/*
  # Every library the binaries load but glibc's, libstdc++'s and CUDA's own, which the machine has;
  # those go in glibc/ too, with the loader, for a machine whose glibc is older than this one's.
  mkdir -p .gpu/bundle/glibc
  ldd build/dew build/tests/dew_gpu_tests | awk '/=> \// {print $3}' | sort -u | while read -r lib; do
    if [[ "$lib" =~ /(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt)\.so ]]; then
      cp -L "$lib" .gpu/bundle/glibc/
    else
      cp -L "$lib" .gpu/bundle/lib/
    fi
  done
  cp -L /lib64/ld-linux-x86-64.so.2 .gpu/bundle/glibc/
  tar -C .gpu/bundle -czf .gpu/bundle.tar.gz bin lib glibc
  rm -rf .gpu/bundle
  echo "packed .gpu/bundle.tar.gz ($(du -h .gpu/bundle.tar.gz | cut -f1)); carry .gpu"
}

run() {
  local out="${OUT:-/tmp/dew-qualify}" dir=/tmp/dew-gpu
  SECONDS=0
  mkdir -p "$out" "$dir"
  tar -C "$dir" -xzf .gpu/bundle.tar.gz
  export LD_LIBRARY_PATH="$dir/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
  # The binaries as built; through the bundled glibc and loader if this machine's glibc is older.
  local run=()
  if ! "$dir/bin/dew" --help >/dev/null 2>&1; then
    run=("$dir/glibc/ld-linux-x86-64.so.2" --library-path "$dir/glibc:$LD_LIBRARY_PATH")
    echo "running through the bundled glibc: $("$dir/bin/dew" --help 2>&1 | head -1)"
  fi
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv | tee "$out/gpu.txt" ||
    echo "no nvidia-smi: no GPU here" | tee "$out/gpu.txt"
  local check=fail tests=fail
  # A pass needs rows that ran: "0 passed" means no CUDA implementation could run.
  # Each step has its own limit; together they stay under 8 minutes.
  timeout 70 "${run[@]}" "$dir/bin/dew" check --impl cuda --forward-only >"$out/check.txt" 2>&1 &&
    ! tail -1 "$out/check.txt" | grep -q '^0 passed' && check=pass
  timeout 40 "${run[@]}" "$dir/bin/dew_gpu_tests" >"$out/gpu_tests.txt" 2>&1 && tests=pass
  timeout 70 "${run[@]}" "$dir/bin/dew" bench cuda >"$out/bench_dew.txt" 2>&1 || echo "dew bench cuda failed" >>"$out/bench_dew.txt"
  timeout 35 python3 bench/cuda_pytorch.py >"$out/bench_torch.txt" 2>&1 || echo "cuda_pytorch.py failed" >>"$out/bench_torch.txt"
  # The training steps in bf16 mixed precision: GPT-2 124M (B 16, T 1024) and Qwen3-0.6B (B 8, T 1024),
  # Dew's and PyTorch's (bench/train_pytorch_gpu.py: GPT-2 eager and compiled, Qwen3 compiled),
  # MFU against the bf16 rate Dew measured.
  timeout 60 "${run[@]}" "$dir/bin/dew" bench train gpt2-124m --device cuda:0 --precision bf16 --batch 16 --tokens 1024 \
    --steps 3 --rounds 1 >"$out/train_dew.txt" 2>&1 || echo "dew bench train failed" >>"$out/train_dew.txt"
  timeout 50 "${run[@]}" "$dir/bin/dew" bench train qwen3-0.6b --device cuda:0 --precision bf16 --batch 8 \
    --tokens 1024 --steps 2 --rounds 1 >"$out/train_qwen3_dew.txt" 2>&1 ||
    echo "dew bench train qwen3-0.6b failed" >>"$out/train_qwen3_dew.txt"
  local peak
  peak=$(awk '/gemm +bf16 8192x8192x8192/ {print $5}' "$out/bench_dew.txt")
  timeout 85 python3 bench/train_pytorch_gpu.py gpt2-124m "${peak:-790}" eager,compile >"$out/train_torch.txt" 2>&1 ||
    echo "train_pytorch_gpu.py gpt2-124m failed" >>"$out/train_torch.txt"
  timeout 70 python3 bench/train_pytorch_gpu.py qwen3-0.6b "${peak:-790}" compile >"$out/train_qwen3_torch.txt" 2>&1 ||
    echo "train_pytorch_gpu.py qwen3-0.6b failed" >>"$out/train_qwen3_torch.txt"
  echo "== $SECONDS s in all (each step's limit is in this script; tune them from $out/*.txt)"
  echo "== dew check --impl cuda: $check: $(tail -1 "$out/check.txt")"
  grep -E "FAIL" "$out/check.txt" | head -20 || true
  echo "== dew_gpu_tests: $tests: $(grep -E '^\[  (PASSED|FAILED) ' "$out/gpu_tests.txt" | tr '\n' ' ')"
  echo "== dew bench cuda"
  grep -v '^{' "$out/bench_dew.txt" | tail -40
  echo "== PyTorch"
  grep -v '^{' "$out/bench_torch.txt" | tail -40
  echo "== training step"
  grep -v '^{' "$out/train_dew.txt" | tail -4
  grep -v '^{' "$out/train_qwen3_dew.txt" | tail -3
  tail -3 "$out/train_torch.txt"
  tail -2 "$out/train_qwen3_torch.txt"
}

case "${1:-}" in
  pack) pack ;;
  run) run ;;
  *) echo "usage: tools/gpu-qualify.sh pack|run" >&2; exit 2 ;;
esac
