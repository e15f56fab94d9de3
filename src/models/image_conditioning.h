// What every image backbone does the same way with its conditioning: the checks of its config's class
// and time settings and of a forward call's images, times, second times and labels (`kind` ("dit",
// "unet") and `source` name what is refused), and the sinusoidal features of its times.
#pragma once

#include <dew/tensor.h>

#include <string>

namespace dew::models {

void check_conditioning_config(int64_t num_classes, double class_dropout_prob, int64_t time_inputs,
                               const std::string& source);
// x (B, channels, size, size) in the parameters' dtype.
void check_images(const char* kind, const Tensor& x, int64_t channels, int64_t size, DType dtype);
// t (B) floating; r given exactly when time_inputs is 2, of t's shape.
void check_times(const char* kind, const Tensor& t, const Tensor& r, int64_t batch, int64_t time_inputs);
// labels (B) i64 in [0, table_rows): the classes, and the null class num_classes when the table has it.
void check_labels(const char* kind, const Tensor& labels, int64_t batch, int64_t num_classes,
                  int64_t table_rows);
// timestep_embedding(time x time_scale, dim, max_period) (cos then sin) computed in f32 (f64 for an f64
// model) from the times, as DiT's and diffusers' embedders compute it, then cast to the model's dtype.
Tensor time_features(const Tensor& time, double time_scale, int64_t dim, double max_period, DType dtype);

}  // namespace dew::models
