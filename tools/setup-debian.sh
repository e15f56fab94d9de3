#!/bin/sh
# Installs what a fresh Debian 12 machine needs to build and test Dew (see README "Dependencies").
set -eu
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
  g++ cmake ninja-build ccache \
  libfmt-dev libcli11-dev libdnnl-dev libopenblas-dev libopenblas0-pthread libblis-dev \
  nlohmann-json3-dev clang libclang-rt-14-dev \
  libgtest-dev qemu-user >/dev/null
