#!/bin/sh
# Training an image model against PyTorch (docs/perf.md): a config's model and its batch of 64 images, Dew's
# `dew train` (short runs, no samples or evaluations; step time from metrics.jsonl) and PyTorch's
# bench/image_pytorch.py at its best (jemalloc, passive OpenMP; LAYOUT channels_last for convolutions),
# alternating, f32 then bf16. Prints the median images/s of each over ROUNDS rounds of STEPS steps.
# Usage: bench/image_compare.sh CONFIG [ROUNDS] [STEPS] [LAYOUT]   (from the source tree, after building)
set -eu
CONFIG=$1
ROUNDS=${2:-2}
STEPS=${3:-30}
LAYOUT=${4:-contiguous}
B=64
JEMALLOC=$(ls /usr/lib/x86_64-linux-gnu/libjemalloc.so.2)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
for precision in f32 bf16; do
  : > "$TMP/dew" ; : > "$TMP/torch"
  for round in $(seq "$ROUNDS"); do
    rm -rf "$TMP/run"
    build/dew train "$CONFIG" --run-dir "$TMP/run" --set train.steps=$((STEPS + 2)) --set train.log_every=1 \
      --set sample.every=0 --set eval.every=0 --set train.checkpoint_every=0 --set train.precision=$precision \
      > /dev/null 2>&1
    python3 -c "import json,sys
for l in open('$TMP/run/metrics.jsonl'):
    j=json.loads(l)
    if 'images_per_s' in j and j['step']>2: print(j['images_per_s'])" >> "$TMP/dew"
    LD_PRELOAD=$JEMALLOC MALLOC_CONF=background_thread:true,dirty_decay_ms:-1,muzzy_decay_ms:-1 OMP_WAIT_POLICY=PASSIVE \
      /usr/bin/python3 bench/image_pytorch.py "$CONFIG" $B $STEPS 2 $precision "$LAYOUT" |
      python3 -c "import json,sys; [print($B/s) for s in json.loads(sys.stdin.read())['step_seconds']]" >> "$TMP/torch"
  done
  dew=$(median < "$TMP/dew"); torch=$(median < "$TMP/torch")
  echo "$precision: Dew $dew images/s, PyTorch $torch images/s (median per step over $ROUNDS x $STEPS steps)"
done
