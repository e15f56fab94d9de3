// The image backbones' shared conditioning checks (image_conditioning.h).
#include "models/image_conditioning.h"

#include <dew/error.h>
#include <dew/image_ops.h>
#include <dew/ops.h>

namespace dew::models {

void check_conditioning_config(int64_t num_classes, double class_dropout_prob, int64_t time_inputs,
                               const std::string& source) {
  DEW_REQUIRE(
      class_dropout_prob >= 0 && class_dropout_prob < 1 && (num_classes > 0 || class_dropout_prob == 0),
      "{}: class_dropout_prob {}; expected 0 <= p < 1, and 0 without classes", source, class_dropout_prob);
  DEW_REQUIRE(time_inputs == 1 || time_inputs == 2,
              "{}: time_inputs {}; expected 1 (t), or 2 (MeanFlow's r and t)", source, time_inputs);
}

void check_images(const char* kind, const Tensor& x, int64_t channels, int64_t size, DType dtype) {
  DEW_REQUIRE(x.dim() == 4 && x.size(1) == channels && x.size(2) == size && x.size(3) == size,
              "[{}] images {}; expected (B, {}, {}, {}): {} channel(s) of {}x{} pixels", kind, x.describe(),
              channels, size, size, channels, size, size);
  DEW_REQUIRE(x.dtype() == dtype, "[{}] images are {}; expected the parameters' {}", kind,
              dtype_name(x.dtype()), dtype_name(dtype));
}

void check_times(const char* kind, const Tensor& t, const Tensor& r, int64_t batch, int64_t time_inputs) {
  DEW_REQUIRE(t.dim() == 1 && t.size(0) == batch && is_floating(t.dtype()),
              "[{}] times {}; expected a floating vector of {} (one per image)", kind, t.describe(), batch);
  DEW_REQUIRE((time_inputs == 2) == r.defined(), "[{}] {}; this {} takes {}", kind,
              r.defined() ? "a second time r was given" : "no second time r was given", kind,
              time_inputs == 2 ? "r and t (MeanFlow)" : "t alone");
  if (r.defined())
    DEW_REQUIRE(r.shape() == t.shape(), "[{}] r {}; expected t's shape {}", kind, r.describe(),
                shape_str(t.shape()));
}

void check_labels(const char* kind, const Tensor& labels, int64_t batch, int64_t num_classes,
                  int64_t table_rows) {
  DEW_REQUIRE(labels.defined() && labels.dtype() == DType::i64 && labels.shape() == Shape({batch}),
              "[{}] labels {}; expected i64 ({}) classes", kind,
              labels.defined() ? labels.describe() : "missing", batch);
  for (double label : labels.to_f64_vector())
    DEW_REQUIRE(label >= 0 && label<double(table_rows), "[{}] class {}; expected 0 to {}{}", kind,
                                    int64_t(label), num_classes - 1, table_rows>
                                  num_classes
                    ? fmt::format(", or {} (no class)", num_classes)
                    : "");
}

Tensor time_features(const Tensor& time, double time_scale, int64_t dim, double max_period, DType dtype) {
  const DType embed_dtype = dtype == DType::f64 ? DType::f64 : DType::f32;
  Tensor scaled = cast(time, embed_dtype);
  if (time_scale != 1) scaled = mul(scaled, Tensor::full({}, time_scale, embed_dtype, time.device()));
  return cast(timestep_embedding(scaled, dim, max_period), dtype);
}

}  // namespace dew::models
