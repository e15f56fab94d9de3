#!/usr/bin/python3
"""Writes tests/models/torch_fixtures/<family>/: a small random checkpoint in Hugging Face layout
(config.json, model.safetensors in bf16) and torch_logits.safetensors: ids, positions, and the logits
of a plain PyTorch implementation of the family (written here from the transformers modeling code's
mathematics, not imported from it) in float32 and float64. Dew's test loads the same checkpoint and
compares (tests/models/torch_reference_test.cc).

Run with Debian's PyTorch: apt-get install python3-torch && /usr/bin/python3 tools/torch_reference/make_fixtures.py
"""
import json
import math
import os
import struct

import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "models", "torch_fixtures")

BASE = {"vocab_size": 61, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64, "rms_norm_eps": 1e-5}
CONFIGS = {
    # biases everywhere and llama3 rope scaling
    "llama": dict(BASE, model_type="llama", attention_bias=True, mlp_bias=True, rope_theta=500000.0,
                  rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                "high_freq_factor": 4.0, "original_max_position_embeddings": 16}),
    # a sliding window shorter than the sequence, a tied head
    "mistral": dict(BASE, model_type="mistral", num_key_value_heads=1, sliding_window=3,
                    tie_word_embeddings=True, rope_theta=10000.0),
    # q/k/v biases, yarn
    "qwen2": dict(BASE, model_type="qwen2", max_position_embeddings=32, rope_theta=10000.0,
                  rope_scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8}),
    # q/k norms, a head_dim that is not hidden/heads, dynamic NTK past 8 positions (newer rope spelling)
    "qwen3": dict(BASE, model_type="qwen3", head_dim=12, max_position_embeddings=8,
                  rope_parameters={"rope_type": "dynamic", "rope_theta": 1000000.0, "factor": 2.0}),
    "gpt2": {"model_type": "gpt2", "vocab_size": 61, "n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 32,
             "layer_norm_epsilon": 1e-5},
}


def rms_norm(x, weight, eps):
    return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def inverse_frequencies(c, head_dim, longest, dtype):
    """transformers' rope initializations: default, linear, dynamic, yarn, llama3 -> (inv_freq, scale)."""
    rope = c.get("rope_parameters") or dict(c.get("rope_scaling") or {}, rope_theta=c.get("rope_theta", 10000.0))
    kind = rope.get("rope_type", rope.get("type", "default"))
    base = rope["rope_theta"]
    dim = head_dim
    exponents = torch.arange(0, dim, 2, dtype=torch.float64) / dim
    inv_freq = 1.0 / (base ** exponents)
    scale = 1.0
    if kind == "linear":
        inv_freq = inv_freq / rope["factor"]
    elif kind == "dynamic":
        limit = c["max_position_embeddings"]
        if longest > limit:
            grown = base * ((rope["factor"] * longest / limit) - (rope["factor"] - 1)) ** (dim / (dim - 2))
            inv_freq = 1.0 / (grown ** exponents)
    elif kind == "llama3":
        factor, low, high = rope["factor"], rope["low_freq_factor"], rope["high_freq_factor"]
        old = rope["original_max_position_embeddings"]
        wavelength = 2 * math.pi / inv_freq
        scaled = torch.where(wavelength > old / low, inv_freq / factor, inv_freq)
        smooth = (old / wavelength - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelength >= old / high) & (wavelength <= old / low)
        inv_freq = torch.where(medium, smoothed, scaled)
    elif kind == "yarn":
        factor = rope["factor"]
        original = rope.get("original_max_position_embeddings", c["max_position_embeddings"])
        scale = 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0

        def correction_dim(rotations):
            return dim * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))

        low = max(math.floor(correction_dim(rope.get("beta_fast", 32))), 0)
        high = min(math.ceil(correction_dim(rope.get("beta_slow", 1))), dim - 1)
        if low == high:
            high += 0.001
        ramp = ((torch.arange(dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
        extrapolation = 1 - ramp
        inv_freq = inv_freq / factor * (1 - extrapolation) + inv_freq * extrapolation
    elif kind != "default":
        raise ValueError(kind)
    return inv_freq.to(dtype), scale


def llama_family(c, w, ids, positions, dtype, cache=None):
    """Logits of ids (B,T) at positions (B,T). With `cache` (a list, one (k, v) per layer, filled by
    earlier calls), the keys and values grow by concatenation, as transformers' DynamicCache."""
    H, KV = c["num_attention_heads"], c["num_key_value_heads"]
    D = c.get("head_dim", c["hidden_size"] // H)
    B, T = ids.shape
    eps = c.get("rms_norm_eps", 1e-6)  # LlamaConfig's default
    table = torch.float64 if dtype == torch.float64 else torch.float32  # rope tables never in bf16
    inv_freq, scale = inverse_frequencies(c, D, int(positions.max()) + 1, table)
    angles = positions.to(table)[..., None] * inv_freq  # (B,T,D/2)
    cos = (torch.cat((angles, angles), -1).cos()[:, None] * scale).to(dtype)  # (B,1,T,D)
    sin = (torch.cat((angles, angles), -1).sin()[:, None] * scale).to(dtype)
    window = c.get("sliding_window") if c["model_type"] == "mistral" else None
    linear = lambda x, name: x @ w[name + ".weight"].T + (w[name + ".bias"] if name + ".bias" in w else 0)

    h = w["model.embed_tokens.weight"][ids]
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        x = rms_norm(h, w[p + "input_layernorm.weight"], eps)
        q = linear(x, p + "self_attn.q_proj").view(B, T, H, D).transpose(1, 2)
        k = linear(x, p + "self_attn.k_proj").view(B, T, KV, D).transpose(1, 2)
        v = linear(x, p + "self_attn.v_proj").view(B, T, KV, D).transpose(1, 2)
        if c["model_type"] == "qwen3":
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if cache is not None:
            if len(cache) > layer:
                k = torch.cat((cache[layer][0], k), dim=2)
                v = torch.cat((cache[layer][1], v), dim=2)
                cache[layer] = (k, v)
            else:
                cache.append((k, v))
        S = k.shape[2]
        i, j = torch.arange(T)[:, None] + (S - T), torch.arange(S)[None, :]  # queries after the cached keys
        allowed = j <= i
        if window:
            allowed &= i - j < window
        k = k.repeat_interleave(H // KV, dim=1)
        v = v.repeat_interleave(H // KV, dim=1)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(D)
        scores = scores.masked_fill(~allowed, float("-inf"))
        attended = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, H * D)
        h = h + linear(attended, p + "self_attn.o_proj")
        x = rms_norm(h, w[p + "post_attention_layernorm.weight"], eps)
        gate = linear(x, p + "mlp.gate_proj")
        h = h + linear(gate * torch.sigmoid(gate) * linear(x, p + "mlp.up_proj"), p + "mlp.down_proj")
    h = rms_norm(h, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if c.get("tie_word_embeddings") else w["lm_head.weight"]
    return h @ head.T


def gpt2(c, w, ids, positions, dtype):
    H, C = c["n_head"], c["n_embd"]
    D = C // H
    B, T = ids.shape
    eps = c["layer_norm_epsilon"]
    norm = lambda x, name: torch.nn.functional.layer_norm(x, (C,), w[name + ".weight"], w[name + ".bias"], eps)
    conv1d = lambda x, name: x @ w[name + ".weight"] + w[name + ".bias"]  # weights stored (in, out)
    allowed = torch.arange(T)[None, :] <= torch.arange(T)[:, None]
    h = w["wte.weight"][ids] + w["wpe.weight"][positions]
    for layer in range(c["n_layer"]):
        p = f"h.{layer}."
        q, k, v = conv1d(norm(h, p + "ln_1"), p + "attn.c_attn").split(C, dim=-1)
        q, k, v = (t.view(B, T, H, D).transpose(1, 2) for t in (q, k, v))
        scores = ((q @ k.transpose(-1, -2)) / math.sqrt(D)).masked_fill(~allowed, float("-inf"))
        h = h + conv1d((scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, C), p + "attn.c_proj")
        x = conv1d(norm(h, p + "ln_2"), p + "mlp.c_fc")
        x = 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x.pow(3))))
        h = h + conv1d(x, p + "mlp.c_proj")
    return norm(h, "ln_f") @ w["wte.weight"].T


def parameter_shapes(c):
    if c["model_type"] == "gpt2":
        C, V = c["n_embd"], c["vocab_size"]
        shapes = {"wte.weight": (V, C), "wpe.weight": (c["n_positions"], C), "ln_f.weight": (C,), "ln_f.bias": (C,)}
        for layer in range(c["n_layer"]):
            p = f"h.{layer}."
            for name, shape in [("ln_1", (C,)), ("ln_2", (C,))]:
                shapes[p + name + ".weight"] = shape
                shapes[p + name + ".bias"] = shape
            for name, (i, o) in [("attn.c_attn", (C, 3 * C)), ("attn.c_proj", (C, C)), ("mlp.c_fc", (C, 4 * C)),
                                 ("mlp.c_proj", (4 * C, C))]:
                shapes[p + name + ".weight"] = (i, o)
                shapes[p + name + ".bias"] = (o,)
        return shapes
    C, F, V = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    H, KV = c["num_attention_heads"], c["num_key_value_heads"]
    D = c.get("head_dim", C // H)
    qkv_bias = c["model_type"] == "qwen2" or c.get("attention_bias", False)
    shapes = {"model.embed_tokens.weight": (V, C), "model.norm.weight": (C,)}
    if not c.get("tie_word_embeddings"):
        shapes["lm_head.weight"] = (V, C)
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        for name, (o, i) in [("q_proj", (H * D, C)), ("k_proj", (KV * D, C)), ("v_proj", (KV * D, C)),
                             ("o_proj", (C, H * D))]:
            shapes[p + "self_attn." + name + ".weight"] = (o, i)
            if qkv_bias and name != "o_proj" or c.get("attention_bias") and name == "o_proj":
                shapes[p + "self_attn." + name + ".bias"] = (o,)
        if c["model_type"] == "qwen3":
            shapes[p + "self_attn.q_norm.weight"] = (D,)
            shapes[p + "self_attn.k_norm.weight"] = (D,)
        for name, (o, i) in [("gate_proj", (F, C)), ("up_proj", (F, C)), ("down_proj", (C, F))]:
            shapes[p + "mlp." + name + ".weight"] = (o, i)
            if c.get("mlp_bias"):
                shapes[p + "mlp." + name + ".bias"] = (o,)
        shapes[p + "input_layernorm.weight"] = (C,)
        shapes[p + "post_attention_layernorm.weight"] = (C,)
    return shapes


def write_safetensors(path, tensors):
    """The safetensors layout: u64 header length, JSON header (padded with spaces to 8), raw bytes."""
    codes = {torch.bfloat16: "BF16", torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        t = t.contiguous()
        raw = (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()
        header[name] = {"dtype": codes[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    for index, (family, c) in enumerate(CONFIGS.items()):
        directory = os.path.join(OUT, family)
        os.makedirs(directory, exist_ok=True)
        generator = torch.Generator().manual_seed(100 + index)
        weights = {}
        for name, shape in parameter_shapes(c).items():
            is_norm = name.endswith("norm.weight") or ".ln_" in name and name.endswith(".weight") or name == "ln_f.weight"
            t = torch.randn(shape, generator=generator, dtype=torch.float64) * (0.1 if is_norm else 0.3)
            weights[name] = (t + 1 if is_norm else t).to(torch.bfloat16)
        with open(os.path.join(directory, "config.json"), "w") as f:
            json.dump(c, f, indent=1)
        write_safetensors(os.path.join(directory, "model.safetensors"), weights)

        B, T = 2, 11
        ids = torch.randint(0, c["vocab_size"], (B, T), generator=generator)
        positions = torch.arange(T)[None, :] + torch.tensor([[0], [3]])  # rows start at different offsets
        forward = gpt2 if family == "gpt2" else llama_family
        logits = {}
        for dtype, tag in [(torch.float32, "logits_f32"), (torch.float64, "logits_f64")]:
            w = {k: v.to(dtype) for k, v in weights.items()}
            with torch.no_grad():
                logits[tag] = forward(c, w, ids, positions, dtype)
        write_safetensors(os.path.join(directory, "torch_logits.safetensors"),
                          {"ids": ids, "positions": positions, **logits})
        print(family, tuple(logits["logits_f64"].shape), "torch", torch.__version__)


if __name__ == "__main__":
    main()
