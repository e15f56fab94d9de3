// The update rules' per-step constants, computed once per call in double from the hyper-parameters
// (optimizer.cc) and rounded once to the parameter's dtype by each kernel. Plain structs: the CUDA
// kernels include this header too.
#pragma once

namespace dew::ops {

// p = p*decay + step_size*(mean/denom), mean = m + w1*(g - m), second = v*beta2 + w2*g*g,
// denom = sqrt(second)/root + eps: torch.optim.AdamW's single-tensor order.
struct AdamWCoefficients {
  double decay, w1, beta2, w2, root, eps, step_size;
};

// d = g + weight_decay*p; with momentum, buf = first ? d : buf*momentum + keep*d and
// d = nesterov ? d + momentum*buf : buf; then p = p + rate*d (torch.optim.SGD's order).
struct SgdCoefficients {
  double weight_decay, momentum, keep, rate;
  bool has_momentum, first, nesterov;
};

// c = beta1*m + w1*g; p = p*decay - rate*sign(c); m = beta2*m + w2*g (Lion, decoupled decay).
struct LionCoefficients {
  double decay, rate, beta1, w1, beta2, w2;
};

// squared_norm sums x^2 in double over fixed blocks of this many elements, each block in kNormLanes
// interleaved partial sums combined pairwise, and the blocks in order: the same bits at any thread
// count, on every CPU tier.
inline constexpr long long kNormBlock = 1 << 14;
inline constexpr int kNormLanes = 8;

}  // namespace dew::ops
