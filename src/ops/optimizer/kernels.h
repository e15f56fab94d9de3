// The optimizer ops' CPU kernels, written once and compiled per instruction set (NOTE [kernel
// namespaces]): plain loops over contiguous data that the compiler vectorizes. An element's arithmetic
// is the same expressions at every vector width (no contraction: DEW_KERNEL_FLAGS), so every tier gives
// the same bits, and one element's result depends on that element alone: the same at any thread count.
#pragma once

#include <dew/runtime.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <variant>

#include "ops/kernel_types.h"
#include "ops/optimizer/optimizer.h"
#include "simd/isa.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

inline constexpr int64_t kUpdateGrain = 1 << 14;  // elements per parallel_for chunk

// The constants by value and the arrays through local restrict pointers: the loops vectorize only once
// the compiler sees that no store reaches a constant or another array.
template <class T>
void adamw_in_place(T* p, const T* g, T* m, T* v, int64_t n, const AdamWCoefficients& c) {
  const T decay = T(c.decay), w1 = T(c.w1), beta2 = T(c.beta2), w2 = T(c.w2), root = T(c.root),
          eps = T(c.eps), step_size = T(c.step_size);
  parallel_for(n, kUpdateGrain, [=](int64_t begin, int64_t end) {
    T* __restrict pk = p + begin;
    const T* __restrict gk = g + begin;
    T* __restrict mk = m + begin;
    T* __restrict vk = v + begin;
    for (int64_t i = 0; i < end - begin; ++i) {
      const T mean = mk[i] + w1 * (gk[i] - mk[i]);
      const T second = vk[i] * beta2 + w2 * gk[i] * gk[i];
      const T denom = std::sqrt(second) / root + eps;
      mk[i] = mean;
      vk[i] = second;
      pk[i] = pk[i] * decay + step_size * (mean / denom);
    }
  });
}

// Each combination of SGD's switches is its own loop: a branch inside the loop kept it from vectorizing.
template <class T, bool Decays, bool Momentum, bool First, bool Nesterov>
void sgd_loop(T* p, const T* g, T* buffer, int64_t n, T weight_decay, T momentum, T keep, T rate) {
  parallel_for(n, kUpdateGrain, [=](int64_t begin, int64_t end) {
    T* __restrict pk = p + begin;
    const T* __restrict gk = g + begin;
    T* __restrict bk = Momentum ? buffer + begin : nullptr;
    for (int64_t i = 0; i < end - begin; ++i) {
      T d = Decays ? gk[i] + weight_decay * pk[i] : gk[i];
      if constexpr (Momentum) {
        const T b = First ? d : bk[i] * momentum + keep * d;
        bk[i] = b;
        d = Nesterov ? d + momentum * b : b;
      }
      pk[i] = pk[i] + rate * d;
    }
  });
}

template <class T>
void sgd_in_place(T* p, const T* g, T* buffer, int64_t n, const SgdCoefficients& c) {
  const T weight_decay = T(c.weight_decay), momentum = T(c.momentum), keep = T(c.keep), rate = T(c.rate);
  const auto run = [&](auto decays, auto has_momentum, auto first, auto nesterov) {
    sgd_loop<T, decltype(decays)::value, decltype(has_momentum)::value, decltype(first)::value,
             decltype(nesterov)::value>(p, g, buffer, n, weight_decay, momentum, keep, rate);
  };
  using Yes = std::true_type;
  using No = std::false_type;
  const auto with_nesterov = [&](auto decays, auto has_momentum, auto first) {
    c.nesterov ? run(decays, has_momentum, first, Yes{}) : run(decays, has_momentum, first, No{});
  };
  const auto with_first = [&](auto decays, auto has_momentum) {
    c.first ? with_nesterov(decays, has_momentum, Yes{}) : with_nesterov(decays, has_momentum, No{});
  };
  const auto with_momentum = [&](auto decays) {
    buffer ? with_first(decays, Yes{}) : run(decays, No{}, No{}, No{});
  };
  c.weight_decay != 0 ? with_momentum(Yes{}) : with_momentum(No{});
}

template <class T>
void lion_in_place(T* p, const T* g, T* m, int64_t n, const LionCoefficients& c) {
  const T decay = T(c.decay), rate = T(c.rate), beta1 = T(c.beta1), w1 = T(c.w1), beta2 = T(c.beta2),
          w2 = T(c.w2);
  parallel_for(n, kUpdateGrain, [=](int64_t begin, int64_t end) {
    T* __restrict pk = p + begin;
    const T* __restrict gk = g + begin;
    T* __restrict mk = m + begin;
    for (int64_t i = 0; i < end - begin; ++i) {
      const T interpolated = beta1 * mk[i] + w1 * gk[i];
      const T sign = T((interpolated > 0) - (interpolated < 0));
      pk[i] = pk[i] * decay - rate * sign;
      mk[i] = beta2 * mk[i] + w2 * gk[i];
    }
  });
}

// One call of any update rule on f32 or f64 data: outputs are the parameter and its state.
template <class T>
void optimizer_update(const OptimizerUpdateArgs& a, std::vector<Tensor>& outs) {
  const Tensor g = prepare_in_place(a, outs);
  T* p = outs[0].data<T>();
  const int64_t n = outs[0].numel();
  if (const auto* s = std::get_if<AdamWStep>(&a.step))
    adamw_in_place(p, g.data<T>(), outs[1].data<T>(), outs[2].data<T>(), n, adamw_coefficients(*s));
  else if (const auto* s = std::get_if<SgdStep>(&a.step))
    sgd_in_place(p, g.data<T>(), outs.size() > 1 ? outs[1].data<T>() : nullptr, n,
                 sgd_coefficients(*s, outs.size() > 1));
  else
    lion_in_place(p, g.data<T>(), outs[1].data<T>(), n, lion_coefficients(std::get<LionStep>(a.step)));
}

// sum(x^2) in double: each block of kNormBlock elements in kNormLanes interleaved lanes (element i
// to lane i mod kNormLanes) combined pairwise, then the blocks in order (coefficients.h).
template <class T>
double squared_norm(const T* x, int64_t n) {
  static_assert(kNormLanes == 8, "the pairwise combination below names eight lanes");
  const int64_t blocks = (n + kNormBlock - 1) / kNormBlock;
  std::vector<double> partial(size_t(blocks), 0.0);
  parallel_for(blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const T* __restrict xb = x + b * kNormBlock;
      const int64_t length = std::min<int64_t>(kNormBlock, n - b * kNormBlock);
      double lane[kNormLanes] = {};
      int64_t i = 0;
      for (; i + kNormLanes <= length; i += kNormLanes)
        for (int j = 0; j < kNormLanes; ++j) {
          const double e = widen<double>(xb[i + j]);
          lane[j] += e * e;
        }
      for (; i < length; ++i) {
        const double e = widen<double>(xb[i]);
        lane[i % kNormLanes] += e * e;
      }
      partial[size_t(b)] =
          ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
    }
  });
  double total = 0;
  for (double s : partial) total += s;
  return total;
}

template <class T>
void squared_norm(const OneInputArgs& a, std::vector<Tensor>& outs) {
  const Tensor x = a.x.contiguous();
  outs[0].data<double>()[0] = squared_norm(x.data<T>(), x.numel());
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
