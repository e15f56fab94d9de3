# The bar a CUDA backend must beat: PyTorch's training step on this GPU for the models of
# `dew bench train` (gpt2-124m, qwen3-0.6b), written out (no transformers dependency): bf16 autocast,
# fused AdamW, SDPA attention; eager and/or torch.compile.
# usage: train_pytorch_gpu.py MODEL PEAK_TFLOPS [eager,compile]
# MFU = (6 N + 12 L H Dh T) tokens/s / peak (Dew's training_flops_per_token: N counts the matrices, the
# tied head once, not the embedding lookups), with peak = the bf16 rate Dew measured in the same run.
import sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F

CONFIGS = {  # the shapes of bench/train_bench.cc's presets, at the qualification's batch
    "gpt2-124m": dict(L=12, d=768, H=12, Hkv=12, Dh=64, ff=3072, V=50304, T=1024, B=16),
    "qwen3-0.6b": dict(L=28, d=1024, H=16, Hkv=8, Dh=128, ff=3072, V=151936, T=1024, B=8, theta=1e6, eps=1e-6),
}

class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(n)), eps
    def forward(self, x):
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps).to(x.dtype) * self.weight

class Gpt2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["d"]
        self.c = c
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.up, self.down = nn.Linear(d, c["ff"]), nn.Linear(c["ff"], d)
    def forward(self, x, rope):
        B, T, d, H = x.shape[0], x.shape[1], self.c["d"], self.c["H"]
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, H, d // H).unbind(2)
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, d))
        return x + self.down(F.gelu(self.up(self.ln2(x)), approximate="tanh"))

def rotate(x, cos, sin):  # rotate-half rope, x (B, heads, T, Dh)
    a, b = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-b, a), dim=-1) * sin

class Qwen3Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, H, Hkv, Dh, eps = c["d"], c["H"], c["Hkv"], c["Dh"], c["eps"]
        self.c = c
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(d, eps), RMSNorm(d, eps)
        self.q_proj, self.k_proj = nn.Linear(d, H * Dh, bias=False), nn.Linear(d, Hkv * Dh, bias=False)
        self.v_proj, self.o_proj = nn.Linear(d, Hkv * Dh, bias=False), nn.Linear(H * Dh, d, bias=False)
        self.q_norm, self.k_norm = RMSNorm(Dh, eps), RMSNorm(Dh, eps)
        self.gate_proj, self.up_proj = nn.Linear(d, c["ff"], bias=False), nn.Linear(d, c["ff"], bias=False)
        self.down_proj = nn.Linear(c["ff"], d, bias=False)
    def forward(self, x, rope):
        B, T = x.shape[0], x.shape[1]
        H, Hkv, Dh = self.c["H"], self.c["Hkv"], self.c["Dh"]
        h = self.input_layernorm(x)
        q = self.q_norm(self.q_proj(h).view(B, T, H, Dh)).transpose(1, 2)
        k = self.k_norm(self.k_proj(h).view(B, T, Hkv, Dh)).transpose(1, 2)
        v = self.v_proj(h).view(B, T, Hkv, Dh).transpose(1, 2)
        q, k = rotate(q, *rope), rotate(k, *rope)
        k, v = k.repeat_interleave(H // Hkv, dim=1), v.repeat_interleave(H // Hkv, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o_proj(y.transpose(1, 2).reshape(B, T, H * Dh))
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))

class Model(nn.Module):
    def __init__(self, name, c, dev):
        super().__init__()
        self.c, self.qwen = c, name.startswith("qwen3")
        self.wte = nn.Embedding(c["V"], c["d"])
        nn.init.normal_(self.wte.weight, std=0.02)  # as both families initialize it (the head is tied)
        self.blocks = nn.ModuleList((Qwen3Block(c) if self.qwen else Gpt2Block(c)) for _ in range(c["L"]))
        if self.qwen:
            self.wpe, self.ln = None, RMSNorm(c["d"], c["eps"])
            inv = 1.0 / (c["theta"] ** (torch.arange(0, c["Dh"], 2, dtype=torch.float64) / c["Dh"]))
            angles = torch.outer(torch.arange(c["T"], dtype=torch.float64), inv)
            angles = torch.cat((angles, angles), dim=-1)
            self.register_buffer("cos", angles.cos().float().to(dev), persistent=False)
            self.register_buffer("sin", angles.sin().float().to(dev), persistent=False)
        else:
            self.wpe, self.ln = nn.Embedding(c["T"], c["d"]), nn.LayerNorm(c["d"])
    def forward(self, idx, targets):
        x = self.wte(idx)
        rope = None
        if self.qwen:
            rope = (self.cos.to(x.dtype), self.sin.to(x.dtype))
        else:
            x = x + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks: x = b(x, rope)
        logits = self.ln(x) @ self.wte.weight.t()  # tied head
        return F.cross_entropy(logits.float().view(-1, self.c["V"]), targets.view(-1))

def flops_per_token(model, c):
    n = sum(p.numel() for p in model.parameters() if p.dim() >= 2)
    if model.wpe is not None: n -= model.wpe.weight.numel()  # a lookup; wte counts once, as the head
    return 6 * n + 12 * c["L"] * c["H"] * c["Dh"] * c["T"], n

def run(model, c, label, peak, dev):
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, **({"fused": True} if dev == "cuda" else {}))
    B, T, V = c["B"], c["T"], c["V"]
    idx = torch.randint(0, V, (B, T), device=dev); tgt = torch.randint(0, V, (B, T), device=dev)
    def step():
        with torch.autocast(dev, dtype=torch.bfloat16):
            loss = model(idx, tgt)
        loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)
        return loss
    for _ in range(3): step()
    if dev == "cuda": torch.cuda.synchronize()
    times = []
    for _ in range(10):
        t0 = time.perf_counter(); loss = step()
        if dev == "cuda": torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    times.sort()
    fpt, n = flops_per_token(model, c)
    tps = B * T / times[len(times) // 2]
    print(f"{label}: B={B} T={T} median {times[len(times)//2]*1e3:.1f} ms/step (min {times[0]*1e3:.1f}, "
          f"max {times[-1]*1e3:.1f}), {tps:,.0f} tokens/s, MFU {100*fpt*tps/peak:.1f}% of {peak/1e12:.0f} TFLOP/s "
          f"(N={n/1e6:.1f}M), loss {loss.item():.3f}")

def main(argv):
    name = argv[1]
    peak = float(argv[2]) * 1e12
    modes = argv[3].split(",") if len(argv) > 3 else ["eager", "compile"]
    c = dict(CONFIGS[name])
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    if dev == "cpu":  # a smoke test of the script: the same model at a toy size
        c.update(L=2, d=64, H=4, Hkv=2 if name.startswith("qwen3") else 4, Dh=16, ff=128, V=512, T=32, B=2)
    print("torch", torch.__version__, torch.cuda.get_device_name() if dev == "cuda" else "cpu", name)
    torch.manual_seed(0)
    model = Model(name, c, dev).to(dev)
    for mode in modes:
        run(model if mode == "eager" else torch.compile(model), c, mode if mode == "eager" else "torch.compile", peak, dev)

if __name__ == "__main__":
    main(sys.argv)
