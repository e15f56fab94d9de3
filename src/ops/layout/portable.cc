// Layout ops, portable: strided copies through core's copy_strided (any dtype, any device whose copies
// core runs), and the fills and ramps written element by element on the cpu.
#include <cmath>

#include "core/strided.h"
#include "ops/layout/layout.h"

namespace dew::ops {

Tensor padded_interior(const Tensor& out, const LayoutArgs& a) {
  Tensor v = out;
  for (size_t p = 0; p < a.ints.size() / 2; ++p) {
    int64_t d = out.dim() - 1 - int64_t(p);
    v = v.slice(d, a.ints[2 * p], out.size(d) - a.ints[2 * p + 1]);
  }
  return v;
}

namespace {

// The region of `out` that input k of concat (or output k of split) occupies, as a view.
Tensor piece(const Tensor& whole, int64_t axis, int64_t begin, int64_t length) {
  return whole.slice(axis, begin, begin + length);
}

void copy_into(const Tensor& src, const Tensor& dst) {
  detail::copy_strided(src, dst);
}

}  // namespace

void layout_copies(const LayoutArgs& a, std::vector<Tensor>& outs) {
  switch (a.fn) {
    case LayoutFn::concat: {
      const int64_t axis = normalize_axis(a.axis, a.xs[0].dim(), "concat");
      int64_t at = 0;
      for (const Tensor& x : a.xs) copy_into(x, piece(outs[0], axis, at, x.size(axis))), at += x.size(axis);
      return;
    }
    case LayoutFn::split: {
      const int64_t axis = normalize_axis(a.axis, a.xs[0].dim(), "split");
      int64_t at = 0;
      for (size_t k = 0; k < outs.size(); ++k)
        copy_into(piece(a.xs[0], axis, at, a.ints[k]), outs[k]), at += a.ints[k];
      return;
    }
    case LayoutFn::pad: {
      outs[0].fill(a.value);
      copy_into(a.xs[0], padded_interior(outs[0], a));
      return;
    }
    case LayoutFn::permute_copy:
      return copy_into(a.xs[0].permute(a.ints), outs[0]);
    case LayoutFn::tril:
    case LayoutFn::triu: {
      copy_into(a.xs[0], outs[0]);
      DEW_REQUIRE(outs[0].device().kind == Device::Kind::cpu, "[{}] layout_copies zeroes on the cpu only",
                  Layout::name(a));
      const int64_t R = outs[0].size(-2), C = outs[0].size(-1),
                    mats = outs[0].numel() / std::max<int64_t>(R * C, 1);
      const size_t es = dtype_size(outs[0].dtype());
      char* p = static_cast<char*>(outs[0].raw_data());
      for (int64_t m = 0; m < mats; ++m)
        for (int64_t i = 0; i < R; ++i)
          for (int64_t j = 0; j < C; ++j)
            if (a.fn == LayoutFn::tril ? j > i + a.axis : j < i + a.axis)
              std::memset(p + size_t((m * R + i) * C + j) * es, 0, es);  // all-zero bits are 0 in every dtype
      return;
    }
    case LayoutFn::fill:
      return outs[0].fill(a.value);
    case LayoutFn::arange: {
      std::vector<double> v(static_cast<size_t>(outs[0].numel()));
      for (size_t i = 0; i < v.size(); ++i) v[i] = a.start + double(i) * a.step;
      Tensor t = Tensor::from_values(v, outs[0].shape(), outs[0].dtype());
      std::memcpy(outs[0].raw_data(), t.raw_data(), size_t(t.numel()) * dtype_size(t.dtype()));
      return;
    }
  }
}

}  // namespace dew::ops
