// cast: the public function, the float64 reference and the portable implementation.
#include "ops/cast/cast.h"

#include <cmath>
#include <limits>

#include "core/strided.h"

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

}  // namespace

std::string Cast::case_label(const Args& a) {
  return fmt::format("{}->{}", dtype_name(a.x.dtype()), dtype_name(a.to));
}

std::vector<OutputSpec> Cast::infer(const Args& a) {
  return {{a.x.shape(), a.to}};
}

std::vector<Truth> Cast::reference(const Args& args) {
  // The truth is the input itself (or its truncation for integer targets); the only error allowed
  // is the output's own rounding, so the magnitude is zero.
  Tensor value = Tensor::empty(args.x.shape(), is_floating(args.to) ? DType::f64 : args.to);
  if (is_floating(args.to)) {
    auto v = args.x.to_f64_vector();
    std::copy(v.begin(), v.end(), value.data<double>());
    return {{value, Tensor::zeros(args.x.shape(), DType::f64), 0}};
  }
  cast_portable(args, value);
  return {{value, Tensor(), 0}};
}

const select::Registry<CastArgs>& Cast::registry() {
  static const select::Registry<CastArgs> r = [] {
    select::Registry<CastArgs> reg;
    DEW_CUDA_IMPLEMENTATIONS(add_cast_cuda, reg);
    reg.add({"portable", {select::on_cpu<CastArgs>()}, [](const CastArgs& a, std::vector<Tensor>& outs) {
               cast_portable(a, outs[0]);
             }});
    return reg;
  }();
  return r;
}

std::vector<Case<CastArgs>> Cast::cases(std::string_view) {
  auto to = [](DType target, double scale) {
    return [=](DType t, RandomKey k) { return CastArgs{random_input({37, 29}, t, k, scale), target}; };
  };
  auto strided = [](DType t, RandomKey k) {
    return CastArgs{random_input({16, 24}, t, k).transpose(0, 1).slice(0, 1, 23, 2), DType::bf16};
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  return {
      {"to_bf16", {"ci"}, all, to(DType::bf16, 1.0)},
      {"to_f16", {"ci"}, all, to(DType::f16, 1.0)},
      {"to_f16_overflow_underflow", {"ci", "edge"}, {DType::f64, DType::f32}, to(DType::f16, 3e4)},
      {"to_f32", {"ci"}, all, to(DType::f32, 1.0)},
      {"to_f64", {"ci"}, all, to(DType::f64, 1.0)},
      {"to_i32", {"ci"}, all, to(DType::i32, 100.0)},
      {"to_i64", {"ci"}, all, to(DType::i64, 100.0)},
      {"strided_to_bf16", {"ci", "edge"}, all, strided},
  };
}

void cast_into(const Tensor& x, Tensor& out) {
  std::vector<Tensor> outs{out};
  run_op_into<Cast>(CastArgs{x, out.dtype()}, outs);
}

}  // namespace dew::ops

namespace dew {
Tensor cast(const Tensor& x, DType dtype) {
  return ops::run_op<ops::Cast>(ops::CastArgs{x, dtype})[0];
}
}  // namespace dew
