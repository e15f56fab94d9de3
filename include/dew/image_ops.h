// The operations image models are built from (diffusion backbones: DiT, UNet), beside the general
// ones of ops.h. Images are (B,C,H,W), as PyTorch's; tokens (B,T,C); per-sample vectors (B,C).
#pragma once

#include <dew/tensor.h>

namespace dew {

// Images (B,C,H,W) to patch tokens (B, (H/p)(W/p), C p p): patches in row-major order, each token's
// values channel-major (c, i, j) — a Conv2d weight (out, C, p, p) flattened is the matching Linear
// weight. unpatchify is its exact inverse, given the image's height and width.
Tensor patchify(const Tensor& images, int64_t patch);
Tensor unpatchify(const Tensor& tokens, int64_t patch, int64_t height, int64_t width);

// Sinusoidal embedding of times t (B) as (B, dim): cos(t f_i) then sin(t f_i), f_i =
// max_period^(-i/(dim/2)), in t's dtype (an odd dim's last column 0).
Tensor timestep_embedding(const Tensor& t, int64_t dim, double max_period = 10000);

// adaLN's conditioning of tokens x (B,T,C) by per-sample vectors (B,C):
// x (1 + scale) + shift, and residual + gate y.
Tensor modulate(const Tensor& x, const Tensor& shift, const Tensor& scale);
Tensor gated_add(const Tensor& residual, const Tensor& y, const Tensor& gate);

}  // namespace dew
