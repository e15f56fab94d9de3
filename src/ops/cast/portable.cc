// cast, portable: every dtype to every dtype, contiguous or strided, one rounding (RNE) for floating
// targets and truncation toward zero, saturated, for integer ones.
#include <cmath>
#include <limits>

#include "core/strided.h"
#include "ops/cast/cast.h"

namespace dew::ops {
namespace {

template <class To, class From>
To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, float> && std::is_same_v<To, bf16>) {
    return f32_to_bf16(v);
  } else if constexpr (std::is_same_v<From, float> && std::is_same_v<To, f16>) {
    return f32_to_f16(v);
  } else if constexpr (std::is_integral_v<To> && !std::is_same_v<To, bool>) {
    double d = Scalar<From>::to_f64(v);
    if (std::isnan(d)) return To(0);
    d = std::trunc(d);
    if (d <= double(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
    if (d >= double(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return To(d);
  } else {
    return Scalar<To>::from_f64(Scalar<From>::to_f64(v));  // exact widening, or one correct rounding
  }
}

}  // namespace

void cast_portable(const CastArgs& args, Tensor& out) {
  visit_dtype(args.x.dtype(), [&](auto from_zero) {
    visit_dtype(args.to, [&](auto to_zero) {
      using From = decltype(from_zero);
      using To = decltype(to_zero);
      const From* src = static_cast<const From*>(args.x.raw_data());
      To* dst = out.data<To>();
      if (args.x.is_contiguous()) {
        parallel_for(out.numel(), 1 << 16, [&](int64_t i0, int64_t i1) {
          for (int64_t i = i0; i < i1; ++i) dst[i] = convert<To>(src[i]);
        });
      } else {
        int64_t i = 0;
        detail::for_each_offset(args.x.shape(), args.x.strides(),
                                [&](int64_t off) { dst[i++] = convert<To>(src[off]); });
      }
    });
  });
}

void add_cast_portable(select::Registry<CastArgs>& r) {
  r.add({"portable", {select::on_cpu<CastArgs>()}, [](const CastArgs& a, std::vector<Tensor>& outs) {
           cast_portable(a, outs[0]);
         }});
}

}  // namespace dew::ops
