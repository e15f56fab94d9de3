// Indexing ops, portable: copies by rows of the (outer, axis, inner) layout, sums in a fixed order
// (embedding_backward parallel over columns, each column summed in id order; scatter_add serial).
#include <cstring>

#define DEW_KERNEL_NS portable
#include "ops/index/index.h"
#include "ops/kernel_types.h"
#include "ops/scratch.h"

namespace dew::ops {
namespace {

struct AxisLayout {
  int64_t outer = 1, length = 1, inner = 1;
};

AxisLayout around_axis(const Shape& s, int64_t axis) {
  AxisLayout l;
  for (int64_t d = 0; d < int64_t(s.size()); ++d)
    (d < axis ? l.outer : d == axis ? l.length : l.inner) *= s[size_t(d)];
  return l;
}

// out (outer, K, inner) = x (outer, N, inner) at idx (K), in bytes.
void select_rows(const Tensor& x, int64_t axis, const int64_t* idx, int64_t K, void* out) {
  Tensor xc = x.contiguous();
  AxisLayout l = around_axis(x.shape(), axis);
  const size_t row = size_t(l.inner) * dtype_size(x.dtype());
  const char* src = static_cast<const char*>(xc.raw_data());
  char* dst = static_cast<char*>(out);
  parallel_for(l.outer * K, std::max<int64_t>(1, 65536 / int64_t(std::max<size_t>(row, 1))),
               [&](int64_t w0, int64_t w1) {
                 for (int64_t w = w0; w < w1; ++w) {
                   const int64_t o = w / K, k = w % K;
                   std::memcpy(dst + size_t(w) * row, src + size_t(o * l.length + idx[k]) * row, row);
                 }
               });
}

// Calls f(position in index, offset in x) for every element of index, x contiguous, axis replaced.
template <class F>
void along_index(const Tensor& x, const Tensor& index, int64_t axis, F&& f) {
  const Shape& s = index.shape();
  Strides xs = contiguous_strides(x.shape());
  const int64_t* idx = index.data<int64_t>();
  std::vector<int64_t> at(s.size(), 0);
  for (int64_t i = 0, n = index.numel(); i < n; ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < s.size(); ++d) off += (int64_t(d) == axis ? idx[i] : at[d]) * xs[d];
    f(i, off);
    for (size_t d = s.size(); d-- > 0;)
      if (++at[d] < s[d])
        break;
      else
        at[d] = 0;
  }
}

template <class T>
void index_typed(const IndexArgs& a, Tensor& out) {
  using Acc = AccumulatorOf<T>;
  const int64_t axis = a.x.defined() ? normalize_axis(a.axis, a.x.dim(), "index") : 0;
  Tensor ic = a.index.contiguous();
  switch (a.fn) {
    case IndexFn::embedding:
      return select_rows(a.x, 0, ic.data<int64_t>(), ic.numel(), out.raw_data());
    case IndexFn::index_select:
      return select_rows(a.x, axis, ic.data<int64_t>(), ic.numel(), out.raw_data());
    case IndexFn::gather: {  // bytes, so any dtype
      Tensor xc = a.x.contiguous();
      const size_t es = dtype_size(a.x.dtype());
      const char* x = static_cast<const char*>(xc.raw_data());
      char* y = static_cast<char*>(out.raw_data());
      return along_index(a.x, ic, axis, [&](int64_t i, int64_t off) {
        std::memcpy(y + size_t(i) * es, x + size_t(off) * es, es);
      });
    }
    case IndexFn::scatter_add: {
      portable::Scratch<Acc> acc(a.x.numel());
      Tensor xc = a.x.contiguous(), sc = a.src.contiguous();
      const T* x = xc.data<T>();
      const T* src = sc.data<T>();
      T* y = out.data<T>();
      for (size_t i = 0; i < acc.size(); ++i) acc[i] = widen<Acc>(x[i]);
      along_index(a.x, ic, axis, [&](int64_t i, int64_t off) { acc[size_t(off)] += widen<Acc>(src[i]); });
      for (size_t i = 0; i < acc.size(); ++i) y[i] = narrow<T>(acc[i]);
      return;
    }
    case IndexFn::embedding_backward: {
      const int64_t C = a.x.size(-1), rows = ic.numel();
      Tensor dc = a.x.contiguous();
      const T* d = dc.data<T>();
      const int64_t* id = ic.data<int64_t>();
      // f32/f64 accumulate in the output itself; bf16/f16 in an f32 table narrowed at the end.
      portable::Scratch<Acc> scratch(std::is_same_v<T, Acc> ? 0 : a.count * C, Acc(0));
      Acc* acc = scratch.empty() ? reinterpret_cast<Acc*>(out.raw_data()) : scratch.data();
      if (scratch.empty()) std::memset(acc, 0, size_t(a.count * C) * sizeof(Acc));
      parallel_for(C, 64, [&](int64_t c0, int64_t c1) {  // each column summed in id order
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = c0; c < c1; ++c) acc[id[r] * C + c] += widen<Acc>(d[r * C + c]);
      });
      if (!scratch.empty()) {
        T* y = out.data<T>();
        parallel_for(int64_t(scratch.size()), 1 << 16, [&](int64_t i0, int64_t i1) {
          for (int64_t i = i0; i < i1; ++i) y[i] = narrow<T>(scratch[size_t(i)]);
        });
      }
      return;
    }
    case IndexFn::one_hot: {
      int64_t* y = out.data<int64_t>();
      std::fill(y, y + out.numel(), 0);
      for (int64_t r = 0; r < ic.numel(); ++r) y[r * a.count + ic.data<int64_t>()[r]] = 1;
      return;
    }
  }
}

}  // namespace

void add_index_portable(select::Registry<IndexArgs>& r) {
  r.add({"portable", {select::on_cpu<IndexArgs>()}, [](const IndexArgs& a, std::vector<Tensor>& outs) {
           visit_dtype(a.dtype(), [&](auto zero) {
             using T = decltype(zero);
             if constexpr (is_floating_type<T>)
               index_typed<T>(a, outs[0]);
             else
               index_typed<float>(a, outs[0]);  // integer data: only byte copies and one_hot (validated)
           });
         }});
}

}  // namespace dew::ops
