// The recurrent mixers' shared pieces (recurrent_cache.h): softplus in f64 and the convolution inputs a
// cache keeps.
#include "models/recurrent_cache.h"

#include <dew/ops.h>

#include <vector>

#include "ops/document_starts.h"

namespace dew::models {

Tensor softplus(const Tensor& x) {
  const Tensor w = as_dtype(x, DType::f64);
  const Tensor tail = log(add(Tensor::full({}, 1.0, DType::f64, x.device()), exp(neg(abs(w)))));
  return as_dtype(add(relu(w), tail), x.dtype());
}

Tensor last_document_window(const Tensor& segments, int64_t W, DType dtype, Device device) {
  if (!segments.defined()) return {};
  const Tensor seg = segments.to(Device::cpu()).contiguous();
  const int64_t B = seg.size(0), T = seg.size(1);
  std::vector<double> keep;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t start = ops::document_start_of(seg.data<int64_t>(), T, b).back();
    for (int64_t t = -(W - 1); t < T; ++t) keep.push_back(t >= start || (t < 0 && start == 0) ? 1.0 : 0.0);
  }
  return Tensor::from_values(keep, {B, W - 1 + T, 1}, dtype).to(device);
}

void hold_layer(KvCache& cache, int64_t layer) {
  for (auto* per_layer : {&cache.conv_inputs, &cache.states})
    if (int64_t(per_layer->size()) <= layer) per_layer->resize(size_t(layer) + 1);
}

Tensor shared_heads(int64_t heads, int64_t sources, Device device) {
  std::vector<double> source;
  for (int64_t h = 0; h < heads; ++h) source.push_back(double(h / (heads / sources)));
  return Tensor::from_values(source, {heads}, DType::i64).to(device);
}

Tensor kept_conv_inputs(const Tensor& before, const Tensor& inputs, const Tensor& last_document, int64_t W) {
  const int64_t B = inputs.size(0), T = inputs.size(1), C = inputs.size(2);
  Tensor window = concat(
      {before.defined() ? before : Tensor::zeros({B, W - 1, C}, inputs.dtype(), inputs.device()), inputs}, 1);
  if (last_document.defined()) window = mul(window, last_document);
  return window.slice(1, T, T + W - 1).contiguous();
}

}  // namespace dew::models
