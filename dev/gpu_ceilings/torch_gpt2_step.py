# dev/: the bar a CUDA backend must beat -- PyTorch's GPT-2-small training step on this GPU, written
# out (no transformers dependency): bf16 autocast, fused AdamW, SDPA attention. Eager and compiled.
# MFU = (6 N + 12 L d T) tokens/s / peak, with peak = the measured cuBLAS bf16 rate passed as argv[1].
import math, sys, time
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
dev = "cuda"
L, d, H, V, T, B = 12, 768, 12, 50304, 1024, 16

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
    def forward(self, x):
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, H, d // H).unbind(2)
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, d))
        return x + self.down(F.gelu(self.up(self.ln2(x)), approximate="tanh"))

class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, d), nn.Embedding(T, d)
        self.blocks = nn.ModuleList(Block() for _ in range(L))
        self.ln = nn.LayerNorm(d)
    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(T, device=dev))
        for b in self.blocks: x = b(x)
        logits = self.ln(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.float().view(-1, V), targets.view(-1))

def run(model, label, peak):
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=True)
    idx = torch.randint(0, V, (B, T), device=dev); tgt = torch.randint(0, V, (B, T), device=dev)
    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(idx, tgt)
        loss.backward(); opt.step(); opt.zero_grad(set_to_none=True)
    for _ in range(5): step()
    torch.cuda.synchronize()
    times = []
    for _ in range(20):
        t0 = time.perf_counter(); step(); torch.cuda.synchronize(); times.append(time.perf_counter() - t0)
    times.sort()
    n = sum(p.numel() for p in model.parameters()) - model.wpe.weight.numel()  # head tied to wte: counted once
    flops_per_token = 6 * n + 12 * L * d * T
    tps = B * T / times[len(times) // 2]
    print(f"{label}: B={B} T={T} median {times[len(times)//2]*1e3:.1f} ms/step (min {times[0]*1e3:.1f}, max {times[-1]*1e3:.1f}), "
          f"{tps:,.0f} tokens/s, MFU {100*flops_per_token*tps/peak:.1f}% of {peak/1e12:.0f} TFLOP/s (N={n/1e6:.1f}M)")

peak = float(sys.argv[1]) * 1e12 if len(sys.argv) > 1 else 989e12
print("torch", torch.__version__, torch.cuda.get_device_name())
model = GPT().to(dev)
run(model, "eager", peak)
run(torch.compile(model), "torch.compile", peak)
