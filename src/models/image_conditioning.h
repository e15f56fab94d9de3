// The checks every image backbone makes of its inputs the same way: its config's class and time
// settings, and a forward call's images, times, second times and labels. `kind` ("dit", "unet") and
// `source` name what is refused.
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

}  // namespace dew::models
