#!/usr/bin/env python3
"""Checks that clang 14 accepts every C++ translation unit of an existing build, without a second
build: each entry of BUILD_DIR/compile_commands.json (the g++ build's flags, warnings as errors
included) runs under clang++-14 -fsyntax-only, two at a time. CUDA (.cu) entries are nvcc's and
skipped. Prints each failure's first lines and `N checked, N failed`; exits 1 on any failure.
Usage: tools/clang-check.py [BUILD_DIR] (default: build). About four minutes on two cores."""
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

COMPILER = "clang++-14"


def clang_command(command):
    # The compiler (behind ccache or not) becomes clang; the object and dependency outputs go.
    command = re.sub(r"^(\S*ccache\s+)?\S+", COMPILER, command, count=1)
    command = re.sub(r"\s-o\s+\S+", " -fsyntax-only", command)
    return re.sub(r"\s-MD|\s-MT\s+\S+|\s-MF\s+\S+", "", command)


def check(entry):
    if entry["file"].endswith(".cu"):
        return None
    result = subprocess.run(clang_command(entry["command"]), shell=True, cwd=entry["directory"],
                            capture_output=True, text=True)
    return None if result.returncode == 0 else (entry["file"], result.stderr)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    path = os.path.join(build, "compile_commands.json")
    if not os.path.exists(path):
        sys.exit(f"{path} not found: configure the build first (cmake -S . -B {build} -G Ninja)")
    entries = [e for e in json.load(open(path)) if not e["file"].endswith(".cu")]
    with ThreadPoolExecutor(2) as pool:
        failures = [f for f in pool.map(check, entries) if f]
    for file, stderr in failures:
        print(f"FAILED {file}\n" + "\n".join(stderr.splitlines()[:12]))
    print(f"{len(entries)} checked, {len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
