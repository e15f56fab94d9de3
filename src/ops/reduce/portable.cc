// The reductions, portable: every floating dtype, any axes (moved last by a copy), one row at a time.
#include "ops/reduce/reduce.h"
#include "ops/reduce/reduce_row.h"
#include "ops/rows.h"

namespace dew::ops {
namespace {

template <class T>
void reduce_portable(const ReduceArgs& a, Tensor& out) {
  using Acc = AccumulatorOf<T>;
  RowLayout l = rows_along(a.x, a.axes);
  const T* x = l.rows.data<T>();
  const int64_t rows = numel_of(l.kept_shape), n = l.length;
  parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, n)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      Acc v = reduce_row<Acc>(a.fn, x + r * n, n);
      if (a.fn == ReduceFn::argmax)
        out.data<int64_t>()[r] = int64_t(v);
      else
        out.data<T>()[r] = narrow<T>(v);
    }
  });
}

}  // namespace

void add_reduce_portable(select::Registry<ReduceArgs>& r) {
  r.add({"portable", {select::on_cpu<ReduceArgs>()}, [](const ReduceArgs& a, std::vector<Tensor>& outs) {
           ReduceArgs n = a;
           n.axes = normalize_axes(a.axes, a.x.dim(), reduce_name(a.fn).data());
           visit_floating(a.dtype(), [&](auto zero) { reduce_portable<decltype(zero)>(n, outs[0]); });
         }});
}

}  // namespace dew::ops
