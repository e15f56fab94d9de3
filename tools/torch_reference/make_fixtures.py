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
    # 4 experts, 2 a token (renormalized), a sliding window, the router's losses on
    "mixtral": dict(BASE, model_type="mixtral", intermediate_size=24, num_local_experts=4, num_experts_per_tok=2,
                    sliding_window=5, rope_theta=1000000.0, output_router_logits=True),
    # 6 experts, 3 a token (not renormalized), q/k norms, layer 1 dense by mlp_only_layers
    "qwen3_moe": dict(BASE, model_type="qwen3_moe", num_hidden_layers=3, head_dim=12, moe_intermediate_size=16,
                      num_experts=6, num_experts_per_tok=3, norm_topk_prob=False, mlp_only_layers=[1],
                      rope_theta=1000000.0),
    # (1 + w) norms, scaled embeddings, GeGLU, head_dim apart from hidden/heads, one key-value head
    "gemma": dict(BASE, model_type="gemma", head_dim=12, num_key_value_heads=1),
    # norms around each sub-block, a query scalar, both softcaps, sliding layers 0 and 2
    "gemma2": dict(BASE, model_type="gemma2", num_hidden_layers=3, head_dim=8, query_pre_attn_scalar=12,
                   attn_logit_softcapping=1.5, final_logit_softcapping=4.0, sliding_window=3),
    # q/k norms, a local rope base for the sliding layers, linear scaling for the global one
    "gemma3_text": dict(BASE, model_type="gemma3_text", num_hidden_layers=3, head_dim=8, query_pre_attn_scalar=8,
                        sliding_window=3, layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                        rope_theta=10000.0, rope_local_base_freq=100.0,
                        rope_scaling={"rope_type": "linear", "factor": 2.0}),
    # post-norms only, q/k norms over the whole projection
    "olmo2": dict(BASE, model_type="olmo2", rope_theta=10000.0),
    # sinks, biases, windows on even layers, yarn without truncation, MXFP4 experts with active clamps
    "gpt_oss": dict(BASE, model_type="gpt_oss", intermediate_size=32, head_dim=8, num_local_experts=4,
                    num_experts_per_tok=2, sliding_window=3, swiglu_limit=1.0, rope_theta=150000.0,
                    rope_scaling={"rope_type": "yarn", "factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0,
                                  "truncate": False, "original_max_position_embeddings": 8},
                    quantization_config={"quant_method": "mxfp4"}),
    # DeepSeek-V3's routing: sigmoid scores with a bias, 4 groups of 2 experts keeping 2, scaling, a shared
    # expert, the first layer dense; q, k, v biases, per-head q/k norms, half of each head rotated
    "glm4_moe": dict(BASE, model_type="glm4_moe", num_hidden_layers=3, moe_intermediate_size=16, n_routed_experts=8,
                     num_experts_per_tok=2, n_group=4, topk_group=2, routed_scaling_factor=2.5, n_shared_experts=1,
                     first_k_dense_replace=1, norm_topk_prob=True, partial_rotary_factor=0.5, attention_bias=True,
                     use_qk_norm=True, rope_theta=10000.0),
    # Mamba-2: 4 heads of 16 sharing B and C in 2 groups, a state of 8, biases on both projections
    "mamba2": {"model_type": "mamba2", "vocab_size": 61, "hidden_size": 32, "num_hidden_layers": 2, "expand": 2,
               "num_heads": 4, "head_dim": 16, "state_size": 8, "n_groups": 2, "conv_kernel": 4, "use_bias": True,
               "use_conv_bias": True, "layer_norm_epsilon": 1e-5, "tie_word_embeddings": False},
    # Gated DeltaNet layers around a gated attention layer: 2 value heads a key head, K != V; norms scaling
    # by 1 + w; a quarter of each head rotated; experts with a gated shared expert, the middle MLP dense
    "qwen3_next": dict(BASE, model_type="qwen3_next", num_hidden_layers=3, head_dim=16,
                       layer_types=["linear_attention", "full_attention", "linear_attention"],
                       linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8,
                       linear_value_head_dim=6, linear_conv_kernel_dim=4, num_experts=4, num_experts_per_tok=2,
                       moe_intermediate_size=16, shared_expert_intermediate_size=24, mlp_only_layers=[1],
                       norm_topk_prob=True, partial_rotary_factor=0.25, rope_theta=10000.0),
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

        low, high = correction_dim(rope.get("beta_fast", 32)), correction_dim(rope.get("beta_slow", 1))
        if rope.get("truncate", True):
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        if low == high:
            high += 0.001
        ramp = ((torch.arange(dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
        extrapolation = 1 - ramp
        inv_freq = inv_freq / factor * (1 - extrapolation) + inv_freq * extrapolation
    elif kind != "default":
        raise ValueError(kind)
    return inv_freq.to(dtype), scale


def experts_of(c, layer):
    """(router name, [(gate, up, down) names per expert]) of a sparse layer, or None for a dense one."""
    kind = c["model_type"]
    if kind == "mixtral":
        p = f"model.layers.{layer}.block_sparse_moe."
        names = ("w1", "w3", "w2")
        count = c.get("num_local_experts", 8)
    elif kind in ("qwen3_moe", "qwen3_next"):
        sparse = layer not in c.get("mlp_only_layers", []) and (layer + 1) % c.get("decoder_sparse_step", 1) == 0
        if not sparse:
            return None
        p = f"model.layers.{layer}.mlp."
        names = ("gate_proj", "up_proj", "down_proj")
        count = c["num_experts"]
    elif kind == "glm4_moe":
        if layer < c.get("first_k_dense_replace", 1):
            return None
        p = f"model.layers.{layer}.mlp."
        names = ("gate_proj", "up_proj", "down_proj")
        count = c["n_routed_experts"]
    else:
        return None
    return p + "gate.weight", [tuple(f"{p}experts.{e}.{n}.weight" for n in names) for e in range(count)]


ROUTER_LOGITS = []  # every sparse layer's router logits of the last forward, for the router losses


def router_losses(c):
    """transformers' load_balancing_loss_func over the layers' router logits concatenated, and ST-MoE's
    z-loss (the mean of logsumexp² over the same rows)."""
    logits = torch.cat(ROUTER_LOGITS, 0)
    probs = logits.softmax(-1)
    _, chosen = probs.topk(c["num_experts_per_tok"], dim=-1)
    mask = torch.nn.functional.one_hot(chosen, probs.shape[-1]).to(probs.dtype)  # (N,K,E)
    balance = (mask.mean(0) * probs.mean(0)[None]).sum() * probs.shape[-1]
    return balance, logits.logsumexp(-1).pow(2).mean()


def sparse_mlp(c, w, x, router, experts):
    """transformers' sparse MoE block: softmax router (in f32, or f64 for an f64 model), top-k, the kept
    weights renormalized for mixtral or norm_topk_prob, each expert's SwiGLU over its tokens, added back
    weighted. x (B,T,C)."""
    B, T, C = x.shape
    flat = x.reshape(-1, C)
    wide = torch.float64 if x.dtype == torch.float64 else torch.float32
    logits = flat.to(wide) @ w[router].to(wide).T
    ROUTER_LOGITS.append(logits)
    if c["model_type"] == "glm4_moe":
        top, chosen = glm4_moe_routing(c, logits, w[router.replace(".weight", ".e_score_correction_bias")].to(wide))
    else:
        probs = logits.softmax(-1)
        top, chosen = probs.topk(c["num_experts_per_tok"], dim=-1)
        if c["model_type"] == "mixtral" or c.get("norm_topk_prob"):
            top = top / top.sum(-1, keepdim=True)
    top = top.to(x.dtype)
    out = torch.zeros_like(flat)
    for e, (gate, up, down) in enumerate(experts):
        token, slot = (chosen == e).nonzero(as_tuple=True)
        if len(token) == 0:
            continue
        rows = flat[token]
        g = rows @ w[gate].T
        y = (g * torch.sigmoid(g) * (rows @ w[up].T)) @ w[down].T
        out = out.index_add(0, token, y * top[token, slot, None])
    # glm4_moe's shared_experts, qwen3_next's shared_expert: an MLP every token runs beside its experts,
    # qwen3_next's scaled by the sigmoid of its gate
    for shared in (router.replace("gate.weight", "shared_experts."), router.replace("gate.weight", "shared_expert.")):
        if shared + "gate_proj.weight" not in w:
            continue
        g = flat @ w[shared + "gate_proj.weight"].T
        y = (g * torch.sigmoid(g) * (flat @ w[shared + "up_proj.weight"].T)) @ w[shared + "down_proj.weight"].T
        if router.replace("gate.weight", "shared_expert_gate.weight") in w:
            y = torch.sigmoid(flat @ w[router.replace("gate.weight", "shared_expert_gate.weight")].T) * y
        out = out + y
    return out.view(B, T, C)


def glm4_moe_routing(c, logits, bias):
    """transformers' Glm4MoeMoE.route_tokens_to_experts (DeepSeek-V3's): sigmoid scores; groups ranked by
    the sum of their two best biased scores; the scores of all but the best topk_group groups masked to 0;
    the top-k biased scores chosen; weighted by the unbiased scores, renormalized, times the scaling."""
    scores = logits.sigmoid()
    choice = scores + bias
    E, G = scores.shape[-1], c["n_group"]
    group_scores = choice.view(-1, G, E // G).topk(2, dim=-1)[0].sum(dim=-1)
    kept = group_scores.topk(c["topk_group"], dim=-1, sorted=False)[1]
    mask = torch.zeros_like(group_scores).scatter(1, kept, 1).unsqueeze(-1).expand(-1, G, E // G).reshape(-1, E)
    chosen = choice.masked_fill(~mask.bool(), 0.0).topk(c["num_experts_per_tok"], dim=-1, sorted=False)[1]
    weights = scores.gather(1, chosen)
    if c.get("norm_topk_prob", True):
        weights = weights / (weights.sum(-1, keepdim=True) + 1e-20)
    return weights * c.get("routed_scaling_factor", 1.0), chosen


def rotary(c, D, positions, dtype):
    """cos and sin (B,1,T,D) of the rope the config names, the tables in f32 (f64 for f64) as transformers."""
    table = torch.float64 if dtype == torch.float64 else torch.float32  # rope tables never in bf16
    inv_freq, scale = inverse_frequencies(c, int(D * c.get("partial_rotary_factor", 1.0)), int(positions.max()) + 1,
                                          table)
    angles = positions.to(table)[..., None] * inv_freq  # (B,T,D/2)
    cos = (torch.cat((angles, angles), -1).cos()[:, None] * scale).to(dtype)
    sin = (torch.cat((angles, angles), -1).sin()[:, None] * scale).to(dtype)
    return cos, sin


def project_heads(x, linear, p, shape):
    """q, k, v of x through the layer's projections, as (B, heads, T, D); shape = (B, T, H, KV, D)."""
    B, T, H, KV, D = shape
    return (linear(x, p + f"self_attn.{n}_proj").view(B, T, heads, D).transpose(1, 2)
            for n, heads in (("q", H), ("k", KV), ("v", KV)))


def llama_family(c, w, ids, positions, dtype, cache=None):
    """Logits of ids (B,T) at positions (B,T). With `cache` (a list, one (k, v) per layer, filled by
    earlier calls), the keys and values grow by concatenation, as transformers' DynamicCache."""
    H, KV = c["num_attention_heads"], c["num_key_value_heads"]
    D = c.get("head_dim", c["hidden_size"] // H)
    B, T = ids.shape
    eps = c.get("rms_norm_eps", 1e-6)  # LlamaConfig's default
    cos, sin = rotary(c, D, positions, dtype)
    window = c.get("sliding_window") if c["model_type"] in ("mistral", "mixtral") else None
    linear = lambda x, name: x @ w[name + ".weight"].T + (w[name + ".bias"] if name + ".bias" in w else 0)

    h = w["model.embed_tokens.weight"][ids]
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        x = rms_norm(h, w[p + "input_layernorm.weight"], eps)
        q, k, v = project_heads(x, linear, p, (B, T, H, KV, D))
        if c["model_type"] in ("qwen3", "qwen3_moe") or c.get("use_qk_norm"):
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        r = cos.shape[-1]  # the rotated part of each head (partial_rotary_factor), the rest passed through
        q = torch.cat((q[..., :r] * cos + rotate_half(q[..., :r]) * sin, q[..., r:]), -1)
        k = torch.cat((k[..., :r] * cos + rotate_half(k[..., :r]) * sin, k[..., r:]), -1)
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
        sparse = experts_of(c, layer)
        if sparse:
            h = h + sparse_mlp(c, w, x, *sparse)
            continue
        gate = linear(x, p + "mlp.gate_proj")
        h = h + linear(gate * torch.sigmoid(gate) * linear(x, p + "mlp.up_proj"), p + "mlp.down_proj")
    h = rms_norm(h, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if c.get("tie_word_embeddings") else w["lm_head.weight"]
    return h @ head.T


GEMMAS = ("gemma", "gemma2", "gemma3_text")


def gemma_or_olmo2(c, w, ids, positions, dtype):
    """gemma, gemma2, gemma3_text (Gemma*RMSNorm scaling by 1 + w, embeddings times sqrt(hidden) in the
    dtype, GeGLU with tanh GELU; gemma2/3: norms before and after each sub-block, query_pre_attn_scalar,
    softcaps, sliding layers; gemma3: per-head q/k norms, a local rope base for sliding layers) and
    olmo2 (norms after each sub-block only, q/k norms over the whole projection), as transformers'
    modeling code computes them."""
    kind = c["model_type"]
    H, KV = c["num_attention_heads"], c["num_key_value_heads"]
    D = c.get("head_dim", 256 if kind in GEMMAS else c["hidden_size"] // H)
    B, T = ids.shape
    L = c["num_hidden_layers"]
    eps = c.get("rms_norm_eps", 1e-6)
    gemma = kind in GEMMAS

    def norm(x, name):
        weight = w[name]
        return rms_norm(x, 1 + weight if gemma else weight, eps)

    global_rope = rotary(dict(c, rope_theta=c.get("rope_theta", 1000000.0 if kind == "gemma3_text" else 10000.0)),
                         D, positions, dtype)
    local_rope = (rotary({"rope_theta": c.get("rope_local_base_freq", 10000.0)}, D, positions, dtype)
                  if kind == "gemma3_text" else global_rope)
    if "layer_types" in c:
        sliding = [t == "sliding_attention" for t in c["layer_types"]]
    elif kind == "gemma2":
        sliding = [(i + 1) % 2 != 0 for i in range(L)]
    elif kind == "gemma3_text":
        sliding = [(i + 1) % c.get("sliding_window_pattern", 6) != 0 for i in range(L)]
    else:
        sliding = [False] * L
    scaling = c.get("query_pre_attn_scalar", 256) ** -0.5 if kind in ("gemma2", "gemma3_text") else D ** -0.5
    cap = c.get("attn_logit_softcapping", 50.0 if kind == "gemma2" else None)
    final_cap = c.get("final_logit_softcapping", 30.0 if kind == "gemma2" else None)
    post = kind != "gemma"

    h = w["model.embed_tokens.weight"][ids]
    if gemma:
        h = h * torch.tensor(c["hidden_size"] ** 0.5, dtype=dtype)
    for layer in range(L):
        p = f"model.layers.{layer}."
        x = h if kind == "olmo2" else norm(h, p + "input_layernorm.weight")
        project = lambda x, name: x @ w[name + ".weight"].T
        if kind == "olmo2":  # q/k norms over the whole projection, before the heads split
            project = lambda x, name: norm(x @ w[name + ".weight"].T, name.replace("_proj", "_norm") + ".weight") \
                if name[-6] in "qk" else x @ w[name + ".weight"].T
        q, k, v = project_heads(x, project, p, (B, T, H, KV, D))
        if kind == "gemma3_text":
            q, k = norm(q, p + "self_attn.q_norm.weight"), norm(k, p + "self_attn.k_norm.weight")
        cos, sin = local_rope if sliding[layer] else global_rope
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
        allowed = j <= i
        if sliding[layer]:
            allowed &= i - j < c.get("sliding_window", 4096)
        k = k.repeat_interleave(H // KV, dim=1)
        v = v.repeat_interleave(H // KV, dim=1)
        scores = (q @ k.transpose(-1, -2)) * scaling
        if cap:
            scores = torch.tanh(scores / cap) * cap
        scores = scores.masked_fill(~allowed, float("-inf"))
        attended = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, H * D)
        out = attended @ w[p + "self_attn.o_proj.weight"].T
        h = h + (norm(out, p + "post_attention_layernorm.weight") if post else out)
        if kind == "olmo2":
            x = h
        else:
            x = norm(h, p + ("pre_feedforward_layernorm.weight" if post else "post_attention_layernorm.weight"))
        gate = x @ w[p + "mlp.gate_proj.weight"].T
        act = gate * torch.sigmoid(gate) if kind == "olmo2" else torch.nn.functional.gelu(gate, approximate="tanh")
        out = (act * (x @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
        h = h + (norm(out, p + "post_feedforward_layernorm.weight") if post else out)
    h = norm(h, "model.norm.weight")
    head = w["model.embed_tokens.weight"] if c.get("tie_word_embeddings", gemma) else w["lm_head.weight"]
    logits = h @ head.T
    if final_cap:
        logits = torch.tanh(logits / final_cap) * final_cap
    return logits


FP4_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def decode_mxfp4(blocks, scales):
    """gpt-oss's MXFP4: blocks (E, R, G, 16) u8, two e2m1 values a byte, the low nibble first; scales
    (E, R, G) e8m0, 2^(s - 127) for each 32 values; decoded (E, R, 32 G) then transposed to (E, 32 G, R)."""
    lut = torch.tensor(FP4_VALUES, dtype=torch.float64)
    E, R, G, _ = blocks.shape
    values = torch.stack((lut[(blocks & 0x0F).long()], lut[(blocks >> 4).long()]), dim=-1).reshape(E, R, G, 32)
    values = values * torch.pow(2.0, scales.to(torch.float64) - 127)[..., None]
    return values.reshape(E, R, 32 * G).transpose(1, 2).contiguous()


def gpt_oss(c, w, ids, positions, dtype):
    """transformers' gpt-oss: q, k, v, o with biases, a learned sink logit per head in each softmax,
    sliding windows on even layers, yarn rope; the router (with a bias) keeps the top-k logits and takes
    their softmax; experts x @ W with biases, gate and up interleaved, clamped SwiGLU."""
    H, KV, D = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    B, T = ids.shape
    eps = c.get("rms_norm_eps", 1e-5)
    cos, sin = rotary(c, D, positions, dtype)
    alpha, limit, K = c.get("swiglu_alpha", 1.702), c.get("swiglu_limit", 7.0), c["num_experts_per_tok"]
    linear = lambda x, name: x @ w[name + ".weight"].T + w[name + ".bias"]
    h = w["model.embed_tokens.weight"][ids]
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        x = rms_norm(h, w[p + "input_layernorm.weight"], eps)
        q, k, v = project_heads(x, linear, p, (B, T, H, KV, D))
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
        allowed = j <= i
        if layer % 2 == 0:
            allowed &= i - j < c["sliding_window"]
        k = k.repeat_interleave(H // KV, dim=1)
        v = v.repeat_interleave(H // KV, dim=1)
        scores = ((q @ k.transpose(-1, -2)) / math.sqrt(D)).masked_fill(~allowed, float("-inf"))
        sinks = w[p + "self_attn.sinks"].to(scores.dtype).reshape(1, H, 1, 1).expand(B, H, T, 1)
        probs = torch.cat((scores, sinks), -1).softmax(-1)[..., :-1]
        attended = (probs @ v).transpose(1, 2).reshape(B, T, H * D)
        h = h + linear(attended, p + "self_attn.o_proj")
        x = rms_norm(h, w[p + "post_attention_layernorm.weight"], eps).reshape(B * T, -1)
        wide = torch.float64 if dtype == torch.float64 else torch.float32
        logits = x.to(wide) @ w[p + "mlp.router.weight"].to(wide).T + w[p + "mlp.router.bias"].to(wide)
        ROUTER_LOGITS.append(logits)
        top, chosen = logits.topk(K, dim=-1)
        weights = top.softmax(-1).to(dtype)
        out = torch.zeros_like(x)
        for e in range(c["num_local_experts"]):
            token, slot = (chosen == e).nonzero(as_tuple=True)
            if len(token) == 0:
                continue
            gate_up = x[token] @ w[p + "mlp.experts.gate_up_proj"][e] + w[p + "mlp.experts.gate_up_proj_bias"][e]
            gate, up = gate_up[..., ::2].clamp(max=limit), gate_up[..., 1::2].clamp(min=-limit, max=limit)
            y = ((up + 1) * gate * torch.sigmoid(gate * alpha)) @ w[p + "mlp.experts.down_proj"][e]
            y = y + w[p + "mlp.experts.down_proj_bias"][e]
            out = out.index_add(0, token, y * weights[token, slot, None])
        h = h + out.view(B, T, -1)
    return rms_norm(h, w["model.norm.weight"], eps) @ w["lm_head.weight"].T


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


def mamba2(c, w, ids, positions, dtype):
    """Mamba2ForCausalLM's torch_forward, its SSD written as the plain recurrence, token by token."""
    C, H, P, N, G, W = (c["hidden_size"], c["num_heads"], c["head_dim"], c["state_size"], c["n_groups"],
                        c["conv_kernel"])
    I = c["expand"] * C
    conv = I + 2 * G * N
    eps = c["layer_norm_epsilon"]
    B, T = ids.shape
    silu = torch.nn.functional.silu
    x = w["backbone.embeddings.weight"][ids]
    for layer in range(c["num_hidden_layers"]):
        p = f"backbone.layers.{layer}.mixer."
        h = rms_norm(x, w[f"backbone.layers.{layer}.norm.weight"], eps)
        z, xbc, dt = (h @ w[p + "in_proj.weight"].T + w[p + "in_proj.bias"]).split([I, conv, H], dim=-1)
        xbc = torch.nn.functional.conv1d(xbc.transpose(1, 2), w[p + "conv1d.weight"], w[p + "conv1d.bias"],
                                         padding=W - 1, groups=conv)[..., :T].transpose(1, 2)
        xs, b, cc = silu(xbc).split([I, G * N, G * N], dim=-1)
        xs = xs.reshape(B, T, H, P)
        b = b.reshape(B, T, G, N).repeat_interleave(H // G, dim=2)
        cc = cc.reshape(B, T, G, N).repeat_interleave(H // G, dim=2)
        dt = torch.nn.functional.softplus(dt + w[p + "dt_bias"])  # (B, T, H)
        A = -torch.exp(w[p + "A_log"])
        state = torch.zeros(B, H, P, N, dtype=dtype)  # transformers' layout: (head_dim, state_size)
        ys = []
        for t in range(T):
            state = state * torch.exp(dt[:, t] * A)[..., None, None] + \
                (dt[:, t, :, None] * xs[:, t])[..., None] * b[:, t, :, None, :]
            ys.append((state * cc[:, t, :, None, :]).sum(-1) + w[p + "D"][:, None] * xs[:, t])
        y = torch.stack(ys, 1).reshape(B, T, I) * silu(z)
        x = x + rms_norm(y, w[p + "norm.weight"], eps) @ w[p + "out_proj.weight"].T + w[p + "out_proj.bias"]
    x = rms_norm(x, w["backbone.norm_f.weight"], eps)
    return x @ (w["backbone.embeddings.weight"] if c["tie_word_embeddings"] else w["lm_head.weight"]).T


def gated_delta_net(c, w, x, p):
    """Qwen3NextGatedDeltaNet's mathematics over x (B,T,C): the projections' per-key-head layout, the causal
    convolution with SiLU, q and k l2-normalized, the gated delta rule token by token, each head's RMSNorm
    gated by silu(z), the out-projection."""
    Hk, Hv, Dk, Dv, W = (c["linear_num_key_heads"], c["linear_num_value_heads"], c["linear_key_head_dim"],
                         c["linear_value_head_dim"], c["linear_conv_kernel_dim"])
    r, (B, T, _) = Hv // Hk, x.shape
    silu = torch.nn.functional.silu
    q, k, v, z = (x @ w[p + "in_proj_qkvz.weight"].T).view(B, T, Hk, 2 * Dk + 2 * r * Dv).split(
        [Dk, Dk, r * Dv, r * Dv], dim=-1)
    b, a = (x @ w[p + "in_proj_ba.weight"].T).view(B, T, Hk, 2 * r).split([r, r], dim=-1)
    mixed = torch.cat([q.reshape(B, T, -1), k.reshape(B, T, -1), v.reshape(B, T, -1)], -1).transpose(1, 2)
    mixed = silu(torch.nn.functional.conv1d(mixed, w[p + "conv1d.weight"], padding=W - 1,
                                            groups=mixed.shape[1])[..., :T]).transpose(1, 2)
    q, k, v = mixed.split([Hk * Dk, Hk * Dk, Hv * Dv], dim=-1)
    l2 = lambda t: t * torch.rsqrt((t * t).sum(-1, keepdim=True) + 1e-6)
    q = l2(q.reshape(B, T, Hk, Dk)).repeat_interleave(r, dim=2) / math.sqrt(Dk)
    k = l2(k.reshape(B, T, Hk, Dk)).repeat_interleave(r, dim=2)
    v = v.reshape(B, T, Hv, Dv)
    beta = b.reshape(B, T, Hv).sigmoid()
    g = -w[p + "A_log"].exp() * torch.nn.functional.softplus(a.reshape(B, T, Hv) + w[p + "dt_bias"])
    state = torch.zeros(B, Hv, Dk, Dv, dtype=x.dtype)
    outs = []
    for t in range(T):
        state = state * g[:, t].exp()[..., None, None]
        delta = (v[:, t] - (state * k[:, t, :, :, None]).sum(-2)) * beta[:, t, :, None]
        state = state + k[:, t, :, :, None] * delta[:, :, None, :]
        outs.append((state * q[:, t, :, :, None]).sum(-2))
    y = rms_norm(torch.stack(outs, 1), w[p + "norm.weight"], c["rms_norm_eps"]) * silu(z.reshape(B, T, Hv, Dv))
    return y.reshape(B, T, Hv * Dv) @ w[p + "out_proj.weight"].T


def qwen3_next(c, w, ids, positions, dtype):
    """Qwen3NextForCausalLM: every norm but the DeltaNet's scaling by 1 + w; Gated DeltaNet on the
    linear_attention layers; on the others attention with per-head q/k norms, a quarter of each head rotated,
    and its output times the sigmoid of the gate q_proj yields beside the queries; sparse MLPs with a gated
    shared expert."""
    H, KV, D, eps = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"], c["rms_norm_eps"]
    B, T = ids.shape
    norm = lambda x, name: rms_norm(x, 1 + w[name], eps)
    cos, sin = rotary(c, D, positions, dtype)
    r = cos.shape[-1]
    h = w["model.embed_tokens.weight"][ids]
    for layer, kind in enumerate(c["layer_types"]):
        p = f"model.layers.{layer}."
        x = norm(h, p + "input_layernorm.weight")
        if kind == "linear_attention":
            h = h + gated_delta_net(c, w, x, p + "linear_attn.")
        else:
            q, gate = (x @ w[p + "self_attn.q_proj.weight"].T).view(B, T, H, 2 * D).split([D, D], dim=-1)
            q = norm(q, p + "self_attn.q_norm.weight").transpose(1, 2)
            k = norm((x @ w[p + "self_attn.k_proj.weight"].T).view(B, T, KV, D), p + "self_attn.k_norm.weight")
            k = k.transpose(1, 2)
            v = (x @ w[p + "self_attn.v_proj.weight"].T).view(B, T, KV, D).transpose(1, 2)
            q = torch.cat((q[..., :r] * cos + rotate_half(q[..., :r]) * sin, q[..., r:]), -1)
            k = torch.cat((k[..., :r] * cos + rotate_half(k[..., :r]) * sin, k[..., r:]), -1)
            k, v = k.repeat_interleave(H // KV, dim=1), v.repeat_interleave(H // KV, dim=1)
            allowed = torch.arange(T)[None, :] <= torch.arange(T)[:, None]
            scores = ((q @ k.transpose(-1, -2)) / math.sqrt(D)).masked_fill(~allowed, float("-inf"))
            attended = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, H * D)
            h = h + (attended * torch.sigmoid(gate.reshape(B, T, H * D))) @ w[p + "self_attn.o_proj.weight"].T
        x = norm(h, p + "post_attention_layernorm.weight")
        sparse = experts_of(c, layer)
        if sparse:
            h = h + sparse_mlp(c, w, x, *sparse)
            continue
        gate = x @ w[p + "mlp.gate_proj.weight"].T
        h = h + (gate * torch.sigmoid(gate) * (x @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    return norm(h, "model.norm.weight") @ w["lm_head.weight"].T


def qwen3_next_shapes(c, shapes):
    C, F, H, KV, D = (c["hidden_size"], c["intermediate_size"], c["num_attention_heads"], c["num_key_value_heads"],
                      c["head_dim"])
    Hk, Hv, Dk, Dv, W = (c["linear_num_key_heads"], c["linear_num_value_heads"], c["linear_key_head_dim"],
                         c["linear_value_head_dim"], c["linear_conv_kernel_dim"])
    for layer, kind in enumerate(c["layer_types"]):
        p = f"model.layers.{layer}."
        if kind == "linear_attention":
            a = p + "linear_attn."
            shapes[a + "conv1d.weight"] = (2 * Hk * Dk + Hv * Dv, 1, W)
            shapes[a + "in_proj_qkvz.weight"] = (2 * Hk * Dk + 2 * Hv * Dv, C)
            shapes[a + "in_proj_ba.weight"] = (2 * Hv, C)
            shapes[a + "dt_bias"] = shapes[a + "A_log"] = (Hv,)
            shapes[a + "norm.weight"] = (Dv,)
            shapes[a + "out_proj.weight"] = (C, Hv * Dv)
        else:
            for name, shape in [("q_proj", (2 * H * D, C)), ("k_proj", (KV * D, C)), ("v_proj", (KV * D, C)),
                                ("o_proj", (C, H * D)), ("q_norm", (D,)), ("k_norm", (D,))]:
                shapes[p + "self_attn." + name + ".weight"] = shape
        sparse = experts_of(c, layer)
        if sparse:
            router, experts = sparse
            Fe, Fs = c["moe_intermediate_size"], c["shared_expert_intermediate_size"]
            shapes[router] = (len(experts), C)
            for gate, up, down in experts:
                shapes[gate], shapes[up], shapes[down] = (Fe, C), (Fe, C), (C, Fe)
            for name, shape in (("gate_proj", (Fs, C)), ("up_proj", (Fs, C)), ("down_proj", (C, Fs))):
                shapes[p + "mlp.shared_expert." + name + ".weight"] = shape
            shapes[p + "mlp.shared_expert_gate.weight"] = (1, C)
        else:
            for name, shape in [("gate_proj", (F, C)), ("up_proj", (F, C)), ("down_proj", (C, F))]:
                shapes[p + "mlp." + name + ".weight"] = shape
        shapes[p + "input_layernorm.weight"] = shapes[p + "post_attention_layernorm.weight"] = (C,)
    return shapes


def mamba2_shapes(c):
    C, H, N, G, W, V = c["hidden_size"], c["num_heads"], c["state_size"], c["n_groups"], c["conv_kernel"], c["vocab_size"]
    I = c["expand"] * C
    conv = I + 2 * G * N
    shapes = {"backbone.embeddings.weight": (V, C)}
    for layer in range(c["num_hidden_layers"]):
        p = f"backbone.layers.{layer}."
        shapes[p + "norm.weight"] = (C,)
        shapes[p + "mixer.in_proj.weight"], shapes[p + "mixer.in_proj.bias"] = (I + conv + H, C), (I + conv + H,)
        shapes[p + "mixer.conv1d.weight"], shapes[p + "mixer.conv1d.bias"] = (conv, 1, W), (conv,)
        shapes[p + "mixer.dt_bias"] = shapes[p + "mixer.A_log"] = shapes[p + "mixer.D"] = (H,)
        shapes[p + "mixer.norm.weight"] = (I,)
        shapes[p + "mixer.out_proj.weight"], shapes[p + "mixer.out_proj.bias"] = (C, I), (C,)
    shapes["backbone.norm_f.weight"] = (C,)
    if not c["tie_word_embeddings"]:
        shapes["lm_head.weight"] = (V, C)
    return shapes


def parameter_shapes(c):
    if c["model_type"] == "mamba2":
        return mamba2_shapes(c)
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
    o_bias = c.get("attention_bias") and c["model_type"] != "glm4_moe"
    shapes = {"model.embed_tokens.weight": (V, C), "model.norm.weight": (C,)}
    if not c.get("tie_word_embeddings", c["model_type"] in GEMMAS):
        shapes["lm_head.weight"] = (V, C)
    if c["model_type"] in GEMMAS + ("olmo2",):
        return gemma_or_olmo2_shapes(c, shapes)
    if c["model_type"] == "gpt_oss":
        return gpt_oss_shapes(c, shapes)
    if c["model_type"] == "qwen3_next":
        return qwen3_next_shapes(c, shapes)
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        for name, (o, i) in [("q_proj", (H * D, C)), ("k_proj", (KV * D, C)), ("v_proj", (KV * D, C)),
                             ("o_proj", (C, H * D))]:
            shapes[p + "self_attn." + name + ".weight"] = (o, i)
            if qkv_bias and name != "o_proj" or o_bias and name == "o_proj":
                shapes[p + "self_attn." + name + ".bias"] = (o,)
        if c["model_type"] in ("qwen3", "qwen3_moe") or c.get("use_qk_norm"):
            shapes[p + "self_attn.q_norm.weight"] = (D,)
            shapes[p + "self_attn.k_norm.weight"] = (D,)
        sparse = experts_of(c, layer)
        if sparse:
            router, experts = sparse
            Fe = c["intermediate_size"] if c["model_type"] == "mixtral" else c["moe_intermediate_size"]
            shapes[router] = (len(experts), C)
            for gate, up, down in experts:
                shapes[gate], shapes[up], shapes[down] = (Fe, C), (Fe, C), (C, Fe)
            if c["model_type"] == "glm4_moe":
                shapes[router.replace(".weight", ".e_score_correction_bias")] = (len(experts),)
                Fs = Fe * c.get("n_shared_experts", 1)
                for name, shape in (("gate_proj", (Fs, C)), ("up_proj", (Fs, C)), ("down_proj", (C, Fs))):
                    shapes[p + "mlp.shared_experts." + name + ".weight"] = shape
        else:
            for name, (o, i) in [("gate_proj", (F, C)), ("up_proj", (F, C)), ("down_proj", (C, F))]:
                shapes[p + "mlp." + name + ".weight"] = (o, i)
                if c.get("mlp_bias"):
                    shapes[p + "mlp." + name + ".bias"] = (o,)
        shapes[p + "input_layernorm.weight"] = (C,)
        shapes[p + "post_attention_layernorm.weight"] = (C,)
    return shapes



def gradient_names(c):
    """The parameters whose gradients the fixture keeps: attention, MLP or experts and router, norms."""
    if c["model_type"] == "gpt2":
        return ["h.0.attn.c_attn.weight", "h.1.mlp.c_fc.bias", "ln_f.weight"]
    if c["model_type"] == "mamba2":
        return ["backbone.layers.0.mixer.in_proj.weight", "backbone.layers.0.mixer.conv1d.weight",
                "backbone.layers.1.mixer.A_log", "backbone.layers.1.mixer.dt_bias", "backbone.layers.1.mixer.D",
                "backbone.layers.1.mixer.norm.weight", "backbone.norm_f.weight"]
    last = c["num_hidden_layers"] - 1
    if c["model_type"] == "qwen3_next":  # DeltaNet, gated attention, experts, the gated shared expert
        a, m = "model.layers.0.linear_attn.", f"model.layers.{last}.mlp."
        return [a + "in_proj_qkvz.weight", a + "in_proj_ba.weight", a + "conv1d.weight", a + "A_log", a + "dt_bias",
                a + "norm.weight", "model.layers.1.self_attn.q_proj.weight", "model.layers.1.self_attn.k_norm.weight",
                m + "gate.weight", m + "shared_expert_gate.weight", m + "shared_expert.down_proj.weight",
                "model.norm.weight"]
    names = ["model.layers.0.self_attn.q_proj.weight", f"model.layers.{last}.post_attention_layernorm.weight",
             "model.norm.weight"]
    if c["model_type"] == "gpt_oss":
        p = f"model.layers.{last}."
        return names + [p + "self_attn.sinks", p + "mlp.router.weight", p + "mlp.router.bias",
                        p + "mlp.experts.gate_up_proj", p + "mlp.experts.down_proj_bias"]
    sparse = experts_of(c, last)
    if sparse and c["model_type"] == "glm4_moe":  # the shared expert: some routed ones may see no token
        router, _ = sparse
        names += [router, router.replace("gate.weight", "shared_experts.gate_proj.weight")]
    elif sparse:
        router, experts = sparse
        names += [router, experts[0][0], experts[-1][2]]
    else:
        names.append(f"model.layers.{last}.mlp.down_proj.weight")
    return names


def gemma_or_olmo2_shapes(c, shapes):
    C, F, H, KV = c["hidden_size"], c["intermediate_size"], c["num_attention_heads"], c["num_key_value_heads"]
    kind = c["model_type"]
    D = c.get("head_dim", 256 if kind in GEMMAS else C // H)
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        for name, (o, i) in [("q_proj", (H * D, C)), ("k_proj", (KV * D, C)), ("v_proj", (KV * D, C)),
                             ("o_proj", (C, H * D))]:
            shapes[p + "self_attn." + name + ".weight"] = (o, i)
        if kind == "olmo2":
            shapes[p + "self_attn.q_norm.weight"], shapes[p + "self_attn.k_norm.weight"] = (H * D,), (KV * D,)
        if kind == "gemma3_text":
            shapes[p + "self_attn.q_norm.weight"], shapes[p + "self_attn.k_norm.weight"] = (D,), (D,)
        for name, (o, i) in [("gate_proj", (F, C)), ("up_proj", (F, C)), ("down_proj", (C, F))]:
            shapes[p + "mlp." + name + ".weight"] = (o, i)
        norms = {"gemma": ["input_layernorm", "post_attention_layernorm"],
                 "olmo2": ["post_attention_layernorm", "post_feedforward_layernorm"]}.get(
            kind, ["input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                   "post_feedforward_layernorm"])
        for name in norms:
            shapes[p + name + ".weight"] = (C,)
    return shapes


def gpt_oss_shapes(c, shapes):
    C, F, H, KV, D = (c["hidden_size"], c["intermediate_size"], c["num_attention_heads"], c["num_key_value_heads"],
                      c["head_dim"])
    E = c["num_local_experts"]
    for layer in range(c["num_hidden_layers"]):
        p = f"model.layers.{layer}."
        for name, (o, i) in [("q_proj", (H * D, C)), ("k_proj", (KV * D, C)), ("v_proj", (KV * D, C)),
                             ("o_proj", (C, H * D))]:
            shapes[p + "self_attn." + name + ".weight"] = (o, i)
            shapes[p + "self_attn." + name + ".bias"] = (o,)
        shapes[p + "self_attn.sinks"] = (H,)
        shapes[p + "mlp.router.weight"], shapes[p + "mlp.router.bias"] = (E, C), (E,)
        shapes[p + "mlp.experts.gate_up_proj"] = (E, C, 2 * F)
        shapes[p + "mlp.experts.gate_up_proj_bias"] = (E, 2 * F)
        shapes[p + "mlp.experts.down_proj"] = (E, F, C)
        shapes[p + "mlp.experts.down_proj_bias"] = (E, C)
        shapes[p + "input_layernorm.weight"] = (C,)
        shapes[p + "post_attention_layernorm.weight"] = (C,)
    return shapes


def mxfp4_experts(weights, generator):
    """Replaces each gpt-oss expert matrix with random MXFP4 blocks and scales (exponents 2^-5 to 2^-2)
    and returns the blocks and scales to store in its place."""
    stored = {}
    for name in [n for n in weights if n.endswith("experts.gate_up_proj") or n.endswith("experts.down_proj")]:
        E, cols, R = weights[name].shape
        blocks = torch.randint(0, 256, (E, R, cols // 32, 16), generator=generator, dtype=torch.uint8)
        scales = torch.randint(122, 126, (E, R, cols // 32), generator=generator, dtype=torch.uint8)
        weights[name] = decode_mxfp4(blocks, scales).to(torch.bfloat16)  # exact: 1.5 x 2^k fits in bf16
        stored[name + "_blocks"], stored[name + "_scales"] = blocks, scales
    return stored


def write_safetensors(path, tensors):
    """The safetensors layout: u64 header length, JSON header (padded with spaces to 8), raw bytes."""
    codes = {torch.bfloat16: "BF16", torch.float32: "F32", torch.float64: "F64", torch.int64: "I64",
             torch.uint8: "U8"}
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
    # Families named on the command line only (all without): the others' files stay as committed.
    import sys
    chosen = sys.argv[1:]
    for index, (family, c) in enumerate(CONFIGS.items()):
        if chosen and family not in chosen:
            continue
        directory = os.path.join(OUT, family)
        os.makedirs(directory, exist_ok=True)
        generator = torch.Generator().manual_seed(100 + index)
        weights = {}
        for name, shape in parameter_shapes(c).items():
            is_norm = name.endswith("norm.weight") or ".ln_" in name and name.endswith(".weight") or name in ("ln_f.weight", "backbone.norm_f.weight")
            t = torch.randn(shape, generator=generator, dtype=torch.float64) * (0.1 if is_norm else 0.3)
            weights[name] = (t + 1 if is_norm else t).to(torch.bfloat16)
        with open(os.path.join(directory, "config.json"), "w") as f:
            json.dump(c, f, indent=1)
        stored = dict(weights)
        if family == "gpt_oss":  # the experts as MXFP4, as gpt-oss checkpoints hold them
            quantized = mxfp4_experts(weights, generator)
            stored = {n: t for n, t in weights.items() if n + "_blocks" not in quantized}
            stored.update(quantized)
        write_safetensors(os.path.join(directory, "model.safetensors"), stored)

        B, T = 2, 11
        ids = torch.randint(0, c["vocab_size"], (B, T), generator=generator)
        positions = torch.arange(T)[None, :] + torch.tensor([[0], [3]])  # rows start at different offsets
        forward = {"gpt2": gpt2, "gpt_oss": gpt_oss, "mamba2": mamba2, "qwen3_next": qwen3_next}.get(
            family, gemma_or_olmo2 if family in GEMMAS + ("olmo2",) else llama_family)
        # Gradients of <logits, cotangent> with respect to a few parameters of each kind.
        cotangent = torch.randn((B, T, c["vocab_size"]), generator=generator, dtype=torch.float64)
        outputs = {}
        for dtype, tag in [(torch.float32, "f32"), (torch.float64, "f64")]:
            w = {k: v.to(dtype).requires_grad_() for k, v in weights.items()}
            ROUTER_LOGITS.clear()
            logits = forward(c, w, ids, positions, dtype)
            if ROUTER_LOGITS:
                balance, z = router_losses(c)
                outputs["load_balancing_loss_" + tag], outputs["router_z_loss_" + tag] = balance.detach(), z.detach()
            (logits * cotangent.to(dtype)).sum().backward()
            outputs["logits_" + tag] = logits.detach()
            for name in gradient_names(c):
                outputs[f"grad_{tag}.{name}"] = w[name].grad
        write_safetensors(os.path.join(directory, "torch_logits.safetensors"),
                          {"ids": ids, "positions": positions, "cotangent": cotangent, **outputs})
        logits = outputs
        print(family, tuple(logits["logits_f64"].shape), "torch", torch.__version__)


if __name__ == "__main__":
    main()
