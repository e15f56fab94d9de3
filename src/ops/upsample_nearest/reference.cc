// upsample_nearest's float64 reference: each output pixel (r, s) reads input pixel (r / f, s / f).
#include "ops/upsample_nearest/upsample_nearest.h"

namespace dew::ops {

std::vector<Truth> UpsampleNearest::reference(const Args& a) {
  const Shape out_shape = infer(a)[0].shape;
  const int64_t planes = out_shape[0] * out_shape[1], H = a.x.size(2), W = a.x.size(3), f = a.factor;
  const std::vector<double> x = a.x.to_f64_vector();
  std::vector<double> y(static_cast<size_t>(numel_of(out_shape)));
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t r = 0; r < H * f; ++r)
      for (int64_t s = 0; s < W * f; ++s)
        y[size_t((p * H * f + r) * W * f + s)] = x[size_t((p * H + r / f) * W + s / f)];
  return {{Tensor::from_values(y, out_shape, DType::f64), Tensor::zeros(out_shape, DType::f64), 0}};
}

}  // namespace dew::ops
