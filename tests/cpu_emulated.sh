#!/bin/sh
# The shipped build on another x86-64 CPU: runs the whole gate (`dew check`) under QEMU's user-mode
# emulation of CPU model $2 and checks which tiers ran (the forward rows: rule and derivative rows run
# the same kernels and would only double the emulated time). Catches AVX instructions outside an
# instruction-set region (SIGILL), and a tier chosen for a CPU that lacks it. Exit 77 (skipped)
# without qemu-user. Usage: cpu_emulated.sh DEW_BINARY CPU_MODEL MUST_RUN|- MUST_NOT_RUN, the last an
# extended regex of implementation names.
set -u
dew=$1 cpu=$2 must=$3 must_not=$4
if ! command -v qemu-x86_64 >/dev/null; then
  echo "qemu-x86_64 is not installed (Debian package qemu-user): skipped"
  exit 77
fi
out=$(qemu-x86_64 -cpu "$cpu" "$dew" check --forward-only 2>&1)
rc=$?
echo "$out" | tail -n 1
if [ $rc -ne 0 ]; then
  echo "$out" | grep -v ' pass$' | tail -n 20
  echo "FAILED: dew check under -cpu $cpu exited with status $rc"
  exit 1
fi
if echo "$out" | grep -Eq " ($must_not) "; then
  echo "FAILED: $must_not ran under -cpu $cpu, a CPU without it:"
  echo "$out" | grep -E " ($must_not) " | head -n 5
  exit 1
fi
if [ "$must" != - ] && ! echo "$out" | grep -q " $must .* pass$"; then
  echo "FAILED: no $must implementation ran under -cpu $cpu"
  exit 1
fi
echo "ok: under -cpu $cpu, $must ran (- for none asked) and nothing matching $must_not"
