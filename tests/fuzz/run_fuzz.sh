#!/bin/sh
# Builds the safetensors fuzz target with clang's libFuzzer and AddressSanitizer/UBSan, and runs it
# for a bounded time from the committed seeds. Usage: run_fuzz.sh SOURCE_DIR WORK_DIR SECONDS.
# Exit 77 (reported as skipped) when clang++ is missing; tools/setup-debian.sh installs it.
set -eu
src=$1
work=$2
seconds=$3
cxx=$(command -v clang++-14 || command -v clang++ || true)
if [ -z "$cxx" ]; then
  echo "skipped: clang++ is not installed (tools/setup-debian.sh installs clang and libclang-rt-14-dev)"
  exit 77
fi
launcher=$(command -v ccache || true)
flags="-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I$src/include -I$src/src"
mkdir -p "$work/obj" "$work/corpus"
for f in tests/fuzz/safetensors_fuzz.cc src/io/safetensors_format.cc src/io/json.cc; do
  $launcher "$cxx" $flags -c "$src/$f" -o "$work/obj/$(basename "$f").o"
done
"$cxx" $flags "$work"/obj/*.o -lfmt -o "$work/safetensors_fuzz"
# New inputs go to $work/corpus (kept between runs); a crashing input is saved under $work.
exec "$work/safetensors_fuzz" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
  -dict="$src/tests/fuzz/safetensors.dict" -artifact_prefix="$work/crash-" -print_final_stats=1 \
  "$work/corpus" "$src/tests/fuzz/safetensors_corpus"
