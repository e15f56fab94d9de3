// where, portable: every dtype, broadcast inputs walked row by row (a selection, so exact).
#include "ops/elementwise.h"
#include "ops/where/where.h"

namespace dew::ops {
namespace {

template <class T>
void where_portable(const WhereArgs& args, Tensor& out) {
  T* y = out.data<T>();
  for_each_row<3>(out.shape(), {args.condition, args.a, args.b}, [&](const RowView<3>& v, int64_t o) {
    const bool* c = static_cast<const bool*>(v.in[0]);
    const T* a = static_cast<const T*>(v.in[1]);
    const T* b = static_cast<const T*>(v.in[2]);
    for (int64_t i = 0; i < v.length; ++i)
      y[o + i] = c[i * v.stride[0]] ? a[i * v.stride[1]] : b[i * v.stride[2]];
  });
}

}  // namespace

void add_where_portable(select::Registry<WhereArgs>& r) {
  r.add({"portable", {select::on_cpu<WhereArgs>()}, [](const WhereArgs& a, std::vector<Tensor>& outs) {
           visit_dtype(a.dtype(), [&](auto zero) { where_portable<decltype(zero)>(a, outs[0]); });
         }});
}

}  // namespace dew::ops
