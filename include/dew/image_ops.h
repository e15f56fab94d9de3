// The operations image models are built from (diffusion backbones: DiT, UNet), beside the general
// ones of ops.h. Images are (B,C,H,W), as PyTorch's; tokens (B,T,C); per-sample vectors (B,C).
#pragma once

#include <dew/tensor.h>

#include <array>

namespace dew {

// A 2-D convolution's geometry, as torch.nn.functional.conv2d takes it: (rows, columns) each.
struct Conv2dOptions {
  std::array<int64_t, 2> stride{1, 1}, padding{0, 0}, dilation{1, 1};
  int64_t groups = 1;
};

// Cross-correlation of images x (B,C,H,W) with weight (O, C/groups, kh, kw) plus bias (O, optional):
// (B, O, OH, OW), OH = (H + 2 padding - dilation (kh - 1) - 1) / stride + 1 (zero padding).
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              const Conv2dOptions& options = {});
// Its two gradients, given the output gradient dy: with respect to x (of input_shape; also the
// transposed convolution of dy) and with respect to the weight (of weight_shape).
Tensor conv2d_input_grad(const Tensor& dy, const Tensor& weight, const Shape& input_shape,
                         const Conv2dOptions& options = {});
Tensor conv2d_weight_grad(const Tensor& dy, const Tensor& x, const Shape& weight_shape,
                          const Conv2dOptions& options = {});

// Group normalization of x (B,C,...): statistics over each group of C/groups channels and all
// positions (biased variance), then a per-channel weight and bias (C, optional), as torch's GroupNorm.
Tensor group_norm(const Tensor& x, int64_t groups, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);

// Nearest-neighbour upsampling of images (B,C,H,W) by an integer factor: (B, C, H f, W f).
Tensor upsample_nearest(const Tensor& x, int64_t factor);

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
