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

// NOTE [rows read in place]: an op's input may be a column range of one product (a packed model's q, k
// and v, or gate and up: models/linear.h): contiguous rows a stride apart. glu's forward and rope read
// such rows where they lie instead of copying them first (at a decode step's 32 rows, glu's two copies
// took twice the op's own time); other layouts are made contiguous. Their outputs are contiguous.
//
// The distance between x's rows, its last `inner` axes being a row, when each row is contiguous and the
// rows follow one another at that one distance; 0 when they do not.
inline int64_t row_stride(const Tensor& x, int64_t inner = 1) {
  const int64_t r = x.dim() - inner;  // the row axes are [0, r)
  if (r < 1) return 0;
  int64_t row = 1;
  for (int64_t d = x.dim() - 1; d >= r; --d) {
    if (x.size(d) > 1 && x.strides()[size_t(d)] != row) return 0;
    row *= x.size(d);
  }
  const int64_t stride = x.strides()[size_t(r - 1)];
  if (stride < row) return 0;
  int64_t expected = stride;
  for (int64_t d = r - 1; d >= 0; --d) {
    if (x.size(d) > 1 && x.strides()[size_t(d)] != expected) return 0;
    expected *= x.size(d);
  }
  return stride;
}

// Normalized, sorted, de-duplicated axes; empty means all.
std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, const char* op);

// out (original shape) = y (shape permuted by order), as one strided copy.
void restore_order(const Tensor& y_permuted, const std::vector<int64_t>& order, Tensor& out);

}  // namespace dew::ops
