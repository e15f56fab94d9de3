#!/usr/bin/python3
"""PyTorch's side of `dew bench decode`: loads a Llama-family checkpoint (config.json + safetensors
written by Dew) into the plain implementation of make_fixtures.py, with its KV cache, and times
a batch-1 prefill of a prompt and greedy decoding of new tokens, at f32 and bf16 weights, warm (the
second of two passes), with the same token ids as Dew's bench. Prints one JSON line.

Usage: bench_decode.py MODEL_DIR PROMPT_TOKENS NEW_TOKENS THREADS
"""
import json
import os
import struct
import sys
import time

import torch

from make_fixtures import llama_family

CODES = {"F32": torch.float32, "BF16": torch.bfloat16, "F64": torch.float64, "I64": torch.int64}


def load_safetensors(directory):
    weights = {}
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".safetensors"):
            continue
        with open(os.path.join(directory, name), "rb") as f:
            data = f.read()
        (length,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8:8 + length])
        for key, entry in header.items():
            if key == "__metadata__":
                continue
            begin, end = entry["data_offsets"]
            raw = bytearray(data[8 + length + begin:8 + length + end])
            dtype = CODES[entry["dtype"]]
            storage = torch.frombuffer(raw, dtype=torch.int16 if dtype == torch.bfloat16 else dtype)
            weights[key] = (storage.view(torch.bfloat16) if dtype == torch.bfloat16 else storage).reshape(entry["shape"])
    return weights


def main():
    directory, prompt, new_tokens, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(threads)
    with open(os.path.join(directory, "config.json")) as f:
        c = json.load(f)
    weights = load_safetensors(directory)
    ids = torch.tensor([[(t * 7919) % c["vocab_size"] for t in range(prompt)]])
    rows = []
    for dtype, name in [(torch.float32, "f32"), (torch.bfloat16, "bf16")]:
        w = {k: v.to(dtype) for k, v in weights.items()}
        with torch.no_grad():
            for _ in range(2):  # the second pass is timed
                cache = []
                start = time.perf_counter()
                logits = llama_family(c, w, ids, torch.arange(prompt)[None, :], dtype, cache)
                prefill = time.perf_counter() - start
                start = time.perf_counter()
                for s in range(new_tokens):
                    token = logits[:, -1].argmax(-1, keepdim=True)
                    logits = llama_family(c, w, token, torch.tensor([[prompt + s]]), dtype, cache)
                decode = time.perf_counter() - start
        rows.append({"dtype": name, "prefill_tokens_per_s": prompt / prefill, "decode_tokens_per_s": new_tokens / decode})
    print(json.dumps({"torch": torch.__version__, "threads": threads, "rows": rows}))


if __name__ == "__main__":
    main()
