#!/bin/sh
# Runs one libFuzzer target (built by build_fuzz_targets.sh) for a bounded time from its committed seeds
# (tests/fuzz/TARGET_corpus) and, as regression tests, every crash input kept there. Usage:
# run_fuzz.sh SOURCE_DIR WORK_DIR TARGET SECONDS. Exit 77 (skipped) when the targets were not built.
set -eu
src=$1
work=$2
target=$3
seconds=$4
binary="$work/${target}_fuzz"
if [ ! -x "$binary" ]; then
  echo "skipped: $binary was not built (clang++ missing: see build_fuzz_targets.sh)"
  exit 77
fi
dict=""
[ -f "$src/tests/fuzz/$target.dict" ] && dict="-dict=$src/tests/fuzz/$target.dict"
mkdir -p "$work/corpus/$target"
# New inputs go to $work/corpus/TARGET (kept between runs); a crashing input is saved under $work.
# libFuzzer exits 77 on a finding by default, which ctest would report as skipped: 1 instead.
# shellcheck disable=SC2086
exec "$binary" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 -error_exitcode=1 \
  -timeout_exitcode=1 $dict \
  -artifact_prefix="$work/crash-$target-" -print_final_stats=1 "$work/corpus/$target" "$src/tests/fuzz/${target}_corpus"
