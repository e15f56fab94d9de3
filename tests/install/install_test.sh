#!/bin/sh
# Dew as another project sees it: install the build into a fresh prefix, build examples/library against
# it through find_package(Dew) and through pkg-config, and run the programs — train a small model on a
# text, then generate from its run directory — and configure a project that holds Dew as a subdirectory.
# Usage: install_test.sh SOURCE_DIR BUILD_DIR WORK_DIR
set -eu
src=$1 build=$2 work=$3
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
test -x "$work/prefix/bin/dew"
"$work/prefix/bin/dew" --version

cmake -S "$src/examples/library" -B "$work/cmake" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/configure.log"
cmake --build "$work/cmake" >"$work/build.log"

i=0
while [ $i -lt 300 ]; do
  echo "the river runs past the stone mill number $((i % 23)) and the mill stands still."
  i=$((i + 1))
done >"$work/text.txt"
"$work/cmake/train" "$work/text.txt" "$work/run" 20
out=$("$work/cmake/generate" "$work/run" "the river" 8)
echo "$out"
case $out in "the river"*) ;; *) echo "generate did not continue the prompt" >&2; exit 1 ;; esac

pc=$(dirname "$(find "$work/prefix" -name dew.pc)")
flags=$(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs dew)
libdir=$(PKG_CONFIG_PATH="$pc" pkg-config --variable=libdir dew)
# shellcheck disable=SC2086 # the flags are words
c++ "$src/examples/library/generate.cc" $flags -Wl,-rpath,"$libdir" -o "$work/generate_pkg_config"
test "$("$work/generate_pkg_config" "$work/run" "the river" 8)" = "$out"
# Inside another project's build tree (add_subdirectory): configured only, the build being this one.
mkdir -p "$work/super"
cat >"$work/super/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(super LANGUAGES CXX)
add_subdirectory("$src" dew)
add_executable(generate "$src/examples/library/generate.cc")
target_link_libraries(generate PRIVATE Dew::dew)
CMAKE
cmake -S "$work/super" -B "$work/super/build" -G Ninja >"$work/super.log"
echo "install, find_package, pkg-config and add_subdirectory: ok"
