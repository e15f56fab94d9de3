#!/bin/sh
# Builds the libFuzzer targets (tests/fuzz/*_fuzz.cc) with clang, AddressSanitizer and UBSan, each from
# the Dew sources it reads. Usage: build_fuzz_targets.sh SOURCE_DIR WORK_DIR. Exit 77 (reported as
# skipped) when clang++ is missing; tools/setup-debian.sh installs it.
set -eu
src=$1
work=$2
cxx=$(command -v clang++-14 || command -v clang++ || true)
if [ -z "$cxx" ]; then
  echo "skipped: clang++ is not installed (tools/setup-debian.sh installs clang and libclang-rt-14-dev)"
  exit 77
fi
launcher=$(command -v ccache || true)
# Paths relative to the source tree in ccache's keys: another checkout of the same sources (CI's clone)
# finds these objects in the cache.
export CCACHE_BASEDIR="$src" CCACHE_NOHASHDIR=1
flags="-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -DTOML_HEADER_ONLY=0 -DTOML_SHARED_LIB=1 -I$src/include -I$src/src"
io="src/io/json.cc src/io/files.cc src/core/nearest_name.cc"
tokenize="$(cd "$src" && ls src/tokenize/*.cc src/tokenize/jinja/*.cc | tr '\n' ' ') $io"
sources_safetensors="src/io/safetensors_format.cc src/io/json.cc src/core/nearest_name.cc src/core/printable.cc"
sources_model_config="src/models/config.cc src/models/config_json.cc $io"
sources_toml="src/io/toml.cc $io"
sources_tokenizer="$tokenize"
sources_chat_template="$tokenize"
sources_safetensors_index="src/io/safetensors_format.cc src/io/json.cc src/core/nearest_name.cc src/core/printable.cc"
sources_openai_request="src/serve/openai_api.cc $tokenize"
sources_records="src/data/sources.cc src/data/token_files.cc src/data/files.cc src/data/stage.cc src/data/shuffle.cc src/core/philox.cc src/core/printable.cc $io"
libs_toml="-ltomlplusplus"
libs_tokenizer="-lpcre2-8 -lutf8proc"
libs_chat_template="-lpcre2-8 -lutf8proc"
libs_records="-lxxhash"
libs_openai_request="-lpcre2-8 -lutf8proc"

targets="safetensors safetensors_index model_config toml tokenizer chat_template records openai_request"
mkdir -p "$work/obj"
# Every source once (an object per path), two at a time.
all=$(for t in $targets; do eval echo "tests/fuzz/${t}_fuzz.cc \$sources_$t"; done |
      tr ' ' '\n' | grep . | sort -u)
echo "$all" | xargs -P "$(nproc)" -I{} sh -c \
  "$launcher $cxx $flags -c '$src/{}' -o '$work/obj/'\$(echo '{}' | tr / _).o"
for t in $targets; do
  objects=""
  for f in $(eval echo "tests/fuzz/${t}_fuzz.cc \$sources_$t"); do objects="$objects $work/obj/$(echo "$f" | tr / _).o"; done
  # shellcheck disable=SC2086
  "$cxx" $flags $objects $(eval echo "\${libs_$t:-}") -lfmt -o "$work/${t}_fuzz"
done
echo "built the fuzz targets in $work"
