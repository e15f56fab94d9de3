#!/bin/sh
# The shipped build on another x86-64 CPU: runs the gate (`dew check`, over the implementations
# IMPL selects, - for all) under QEMU's user-mode emulation of CPU model CPU_MODEL, and checks which
# tiers ran. Catches AVX instructions outside an instruction-set region (SIGILL), and a tier chosen
# for a CPU that lacks it. The verdicts are the native gate's business: here each row takes one draw
# (DEW_GATE_DRAWS=1; emulated floating point is 100-200x slower than the CPU's), so a ratio over a
# handful of elements is noise, and only a crash or a missing closing line fails. Exit 77 (skipped)
# without qemu-user. Usage: cpu_emulated.sh DEW_BINARY CPU_MODEL IMPL|- MUST_RUN|- MUST_NOT_RUN, the
# last an extended regex of implementation names.
set -u
dew=$1 cpu=$2 impl=$3 must=$4 must_not=$5
if ! command -v qemu-x86_64 >/dev/null; then
  echo "qemu-x86_64 is not installed (Debian package qemu-user): skipped"
  exit 77
fi
if [ "$impl" = - ]; then impl=""; fi
out=$(DEW_GATE_DRAWS=1 qemu-x86_64 -cpu "$cpu" "$dew" check --forward-only --impl "$impl" 2>&1)
rc=$?
echo "$out" | tail -n 1
if [ $rc -gt 1 ] || ! echo "$out" | tail -n 1 | grep -q ' passed, '; then
  echo "$out" | grep -v ' pass$' | tail -n 20
  echo "FAILED: dew check under -cpu $cpu exited with status $rc"
  exit 1
fi
if echo "$out" | grep -Eq " ($must_not) "; then
  echo "FAILED: $must_not ran under -cpu $cpu, a CPU without it:"
  echo "$out" | grep -E " ($must_not) " | head -n 5
  exit 1
fi
if [ "$must" != - ] && ! echo "$out" | grep -Eq " $must +(f64|f32|bf16|f16) "; then
  echo "FAILED: no $must implementation ran under -cpu $cpu"
  exit 1
fi
echo "ok: under -cpu $cpu, $must ran (- for none asked) and nothing matching $must_not"
