// The sampler's vectorized math: exp over a row of scores at or below the row's maximum.
#pragma once

#include <cstddef>

namespace dew::detail {

// y = exp(x) for each x <= 0 (-inf included), within 2 ulp of libm's (x may be y).
void exp_of_nonpositive(const double* x, double* y, size_t n);

}  // namespace dew::detail
