#!/usr/bin/python3
"""PyTorch's side of `dew bench decode`: loads a Llama-family checkpoint (config.json + safetensors
written by Dew) into the plain implementation of make_fixtures.py, extended with a KV cache, and times
a batch-1 prefill of a prompt and greedy decoding of new tokens, at f32 and bf16 weights, warm (the
second of two passes), with the same token ids as Dew's bench. Prints one JSON line.

Usage: bench_decode.py MODEL_DIR PROMPT_TOKENS NEW_TOKENS THREADS
"""
import json
import math
import os
import struct
import sys
import time

import torch

from make_fixtures import inverse_frequencies, rms_norm, rotate_half

CODES = {"F32": torch.float32, "BF16": torch.bfloat16, "F64": torch.float64}


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


def forward(c, w, ids, start, cache):
    """Logits of ids (1,T) at positions start.. with the cache of earlier positions (a list per layer)."""
    H, KV = c["num_attention_heads"], c["num_key_value_heads"]
    D = c.get("head_dim", c["hidden_size"] // H)
    B, T = ids.shape
    eps = c.get("rms_norm_eps", 1e-6)
    dtype = w["model.embed_tokens.weight"].dtype
    positions = torch.arange(start, start + T)[None, :]
    inv_freq, scale = inverse_frequencies(c, D, start + T, torch.float32)
    angles = positions.to(torch.float32)[..., None] * inv_freq
    cos = (torch.cat((angles, angles), -1).cos()[:, None] * scale).to(dtype)
    sin = (torch.cat((angles, angles), -1).sin()[:, None] * scale).to(dtype)
    linear = lambda x, name: torch.nn.functional.linear(x, w[name + ".weight"], w.get(name + ".bias"))
    h = w["model.embed_tokens.weight"][ids]
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        x = rms_norm(h, w[p + "input_layernorm.weight"], eps)
        q = linear(x, p + "self_attn.q_proj").view(B, T, H, D).transpose(1, 2)
        k = linear(x, p + "self_attn.k_proj").view(B, T, KV, D).transpose(1, 2)
        v = linear(x, p + "self_attn.v_proj").view(B, T, KV, D).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if len(cache) > layer:  # transformers' DynamicCache: concatenation
            k = torch.cat((cache[layer][0], k), dim=2)
            v = torch.cat((cache[layer][1], v), dim=2)
            cache[layer] = (k, v)
        else:
            cache.append((k, v))
        k = k.repeat_interleave(H // KV, dim=1)
        v = v.repeat_interleave(H // KV, dim=1)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(D)  # torch 1.13 has no fused attention
        if T > 1:
            S = k.shape[2]
            scores = scores.masked_fill(~torch.ones(T, S, dtype=torch.bool).tril(S - T), float("-inf"))
        attended = scores.softmax(-1) @ v
        h = h + linear(attended.transpose(1, 2).reshape(B, T, H * D), p + "self_attn.o_proj")
        x = rms_norm(h, w[p + "post_attention_layernorm.weight"], eps)
        gate = linear(x, p + "mlp.gate_proj")
        h = h + linear(torch.nn.functional.silu(gate) * linear(x, p + "mlp.up_proj"), p + "mlp.down_proj")
    h = rms_norm(h, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if c.get("tie_word_embeddings") else w["lm_head.weight"]
    return torch.nn.functional.linear(h, head)


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
                logits = forward(c, w, ids, 0, cache)
                prefill = time.perf_counter() - start
                start = time.perf_counter()
                for s in range(new_tokens):
                    token = logits[:, -1].argmax(-1, keepdim=True)
                    logits = forward(c, w, token, prompt + s, cache)
                decode = time.perf_counter() - start
        rows.append({"dtype": name, "prefill_tokens_per_s": prompt / prefill, "decode_tokens_per_s": new_tokens / decode})
    print(json.dumps({"torch": torch.__version__, "threads": threads, "rows": rows}))


if __name__ == "__main__":
    main()
