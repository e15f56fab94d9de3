#!/bin/sh
# Data-parallel training on this machine (docs/perf.md, "Data parallel"): `dew train` as 2 ranks x 1
# thread (`dew launch -n 2`; also with the optimizer state sharded, "2x1-zero1", the weights too,
# "2x1-zero3", and each model split over both ranks, "2x1-tensor") against 1 rank x 2 threads,
# alternating, on the default job's model and on
# GPT-2-124M (B 4) over the default job's data (its Brown corpus and 8k BPE; GPT-2 keeps its 50,257-row
# vocabulary). Prints per model and layout the median tokens/s over ROUNDS runs of STEPS steps (the
# first two of each run left out), the bytes each rank sent a step, the seconds a step waited for the
# gradients after backward, and each rank's peak bytes.
# Usage: bench/data_parallel.sh [ROUNDS] [STEPS] [PRECISION]   (from the source tree, after building
# and after `build/dew train` has made runs/brown-words-bpe-8k)
set -eu
ROUNDS=${1:-2}
STEPS=${2:-10}
PRECISION=${3:-auto}
LAYOUTS="1x2 2x1 2x1-zero1 2x1-zero3 2x1-tensor"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# The default job with absolute paths, and the same with GPT-2-124M's [model] table and 4 rows a batch.
sed "s|\"\.\./|\"$PWD/|g" examples/default.toml > "$TMP/default.toml"
python3 - "$TMP" <<'EOF'
import re, sys
text = open(sys.argv[1] + "/default.toml").read()
model = '[model]\nmodel_type = "gpt2"\nvocab_size = 50257\nn_embd = 768\nn_layer = 12\nn_head = 12\nn_positions = 1024\n\n'
text = re.sub(r"\[model\]\n(?:[^\[\n].*\n|\n)*", model, text, count=1)
text = re.sub(r'(kind = "batch"\nsize = )8', r"\g<1>4", text, count=1)
open(sys.argv[1] + "/gpt2.toml", "w").write(text)
EOF
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
for model in default gpt2; do
  layouts=$LAYOUTS
  [ "$model" = gpt2 ] && layouts="1x2 2x1 2x1-zero1 2x1-zero3"  # tensor parallelism splits llama blocks
  for layout in $layouts; do : > "$TMP/$model.$layout"; : > "$TMP/$model.$layout.wait"; done
  for round in $(seq "$ROUNDS"); do
    for layout in $layouts; do
      rm -rf "$TMP/run"
      launcher="env DEW_THREADS=2 OMP_NUM_THREADS=2 build/dew" shard=none tensor=1
      [ "$layout" != 1x2 ] && launcher="build/dew launch -n 2 --"
      [ "$layout" = 2x1-zero1 ] && shard=optimizer
      [ "$layout" = 2x1-zero3 ] && shard=full
      [ "$layout" = 2x1-tensor ] && tensor=2
      $launcher train "$TMP/$model.toml" --run-dir "$TMP/run" --set train.steps=$((STEPS + 2)) \
        --set parallel.shard=$shard --set parallel.tensor=$tensor \
        --set train.log_every=1 --set eval.every=0 --set sample.every=0 --set train.precision=$PRECISION \
        > "$TMP/log" 2>&1 || { cat "$TMP/log"; exit 1; }
      python3 - "$TMP/run/metrics.jsonl" "$TMP/$model.$layout" <<'EOF'
import json, sys
out = open(sys.argv[2], "a"); wait = open(sys.argv[2] + ".wait", "a")
for line in open(sys.argv[1]):
    j = json.loads(line)
    if "tokens_per_s" in j and j["step"] > 2:
        print(j["tokens_per_s"], file=out)
        if "communication_wait_s" in j:
            print(j["communication_wait_s"], j["communicated_bytes"], j["step_s"],
                  max(j["peak_bytes_per_rank"]), file=wait)
EOF
    done
  done
  one=$(median < "$TMP/$model.1x2")
  for layout in $layouts; do
    [ "$layout" = 1x2 ] && continue
    two=$(median < "$TMP/$model.$layout")
    wait_s=$(cut -d' ' -f1 "$TMP/$model.$layout.wait" | median)
    bytes=$(cut -d' ' -f2 "$TMP/$model.$layout.wait" | median)
    step_s=$(cut -d' ' -f3 "$TMP/$model.$layout.wait" | median)
    peak=$(cut -d' ' -f4 "$TMP/$model.$layout.wait" | sort -g | tail -1)
    echo "$model ($PRECISION): 1 rank x 2 threads $one tokens/s; $layout $two tokens/s;" \
      "per step $bytes bytes sent by each rank, $wait_s s of $step_s waited after backward;" \
      "peak $peak bytes on a rank"
  done
done
