// Row layout for ops that work along axes: the axes move to the end (a view) and the data is made
// contiguous, so the op sees a (rows, length) matrix. `restore` brings a (rows..., length) result
// back to the original axis order.
#pragma once

#include <dew/tensor.h>

#include <algorithm>
#include <numeric>

namespace dew::ops {

struct RowLayout {
  Tensor rows;                 // contiguous, reduced axes last
  Shape kept_shape;            // the other axes, in order
  int64_t length = 1;          // product of the moved axes
  std::vector<int64_t> order;  // the permutation applied
};

inline RowLayout rows_along(const Tensor& x, const std::vector<int64_t>& axes) {
  std::vector<bool> moved(size_t(x.dim()), false);
  for (int64_t a : axes) moved[size_t(a)] = true;
  RowLayout l;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (!moved[size_t(d)]) l.order.push_back(d), l.kept_shape.push_back(x.size(d));
  for (int64_t d = 0; d < x.dim(); ++d)
    if (moved[size_t(d)]) l.order.push_back(d), l.length *= x.size(d);
  l.rows = x.permute(l.order).contiguous();
  return l;
}

// Normalized, sorted, de-duplicated axes; empty means all.
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, const char* op);

// out (original shape) = y (shape permuted by order), as one strided copy.
void restore_order(const Tensor& y_permuted, const std::vector<int64_t>& order, Tensor& out);

}  // namespace dew::ops
