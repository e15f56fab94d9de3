// The sampler's vectorized math: exp over a row of scores at or below the row's maximum.
#pragma once

#include <cstddef>

namespace dew::detail {

// y = exp(x) for each x in [-708, 0], within 2 ulp (x below -708 gives exp(-708); x may be y).
void exp_of_nonpositive(const double* x, double* y, size_t n);

}  // namespace dew::detail
