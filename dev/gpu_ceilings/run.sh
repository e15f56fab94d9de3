#!/bin/sh
# One device call: build and run the ceilings, then PyTorch's GPT-2 step; logs under $OUT.
set -u
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv 2>&1 | tee $OUT/smi.txt
nvcc -O2 -arch=sm_90 ceilings.cu -lcublas -o /tmp/ceilings 2>&1 | tail -5
/tmp/ceilings 2>&1 | tee $OUT/ceilings.txt
PEAK=$(awk '/square 8192/ {print $NF}' $OUT/ceilings.txt)
PEAK=${PEAK:-989}
PYTHONUNBUFFERED=1 timeout 300 python3 torch_train_step.py gpt2-124m "$PEAK" 2>&1 | grep -v Warning | tee $OUT/torch.txt
