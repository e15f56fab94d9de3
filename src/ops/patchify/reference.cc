// patchify and unpatchify: the float64 reference — each token value found by its own index
// arithmetic, independent of the views the implementation copies through.
#include "ops/patchify/patchify.h"

namespace dew::ops {

std::vector<Truth> Patchify::reference(const Args& a) {
  const Shape out_shape = infer(a)[0].shape;
  const Shape& image = a.inverse ? out_shape : a.x.shape();
  const int64_t B = image[0], C = image[1], H = image[2], W = image[3], p = a.patch, w = W / p;
  const std::vector<double> x = a.x.to_f64_vector();
  std::vector<double> y(x.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t r = 0; r < H; ++r)
        for (int64_t s = 0; s < W; ++s) {  // pixel (r, s) of channel c: token (r/p, s/p), value (c, r%p, s%p)
          const int64_t pixel = ((b * C + c) * H + r) * W + s;
          const int64_t token = b * (H / p) * w + (r / p) * w + s / p;
          const int64_t value = token * C * p * p + (c * p + r % p) * p + s % p;
          if (a.inverse)
            y[size_t(pixel)] = x[size_t(value)];
          else
            y[size_t(value)] = x[size_t(pixel)];
        }
  return {{Tensor::from_values(y, out_shape, DType::f64), Tensor::zeros(out_shape, DType::f64), 0}};
}

}  // namespace dew::ops
