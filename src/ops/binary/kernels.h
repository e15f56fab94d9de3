// The binary ops' loop, written once and compiled per instruction set (NOTE [kernel namespaces]).
#pragma once

#include "ops/binary/binary.h"
#include "ops/binary/scalar.h"
#include "ops/elementwise.h"
#include "ops/isa.h"
#include "ops/kernel_types.h"
#include "ops/map_elements.h"

DEW_ISA_BEGIN
namespace dew::ops::DEW_KERNEL_NS {

template <class T>
void binary_rows(const BinaryArgs& args, Tensor& out) {
  using Acc = std::conditional_t<is_floating_type<T>, AccumulatorOf<T>, double>;
  with_binary_fn(args.fn, [&](auto fn) {
    using Fn = decltype(fn);  // a type: the lambda below uses it without capturing (F would need one)
    constexpr BinaryFn F = Fn::value;
    using Out = std::conditional_t<(F >= BinaryFn::eq), bool, T>;
    Out* y = out.data<Out>();
    for_each_row<2>(out.shape(), {args.a, args.b}, [&](const RowView<2>& v, int64_t o) {
      const T* a = static_cast<const T*>(v.in[0]);
      const T* b = static_cast<const T*>(v.in[1]);
      Out* yo = y + o;
      auto put = [&](int64_t i, Acc r) {
        if constexpr (std::is_same_v<Out, bool>)
          yo[i] = r != Acc(0);
        else
          yo[i] = narrow<T>(r);
      };
      if constexpr (is_floating_type<T> && !std::is_same_v<Out, bool>) {
        if (v.stride[0] == 1 && v.stride[1] == 1)  // contiguous rows: map_elements, f16 and bf16 by chunks
          return map_elements<T>(std::array<const T*, 2>{a, b}, std::array<T*, 1>{yo}, v.length,
                                 [](Acc x, Acc z) { return binary_apply<Fn::value>(x, z); });
      }
      if (v.stride[0] == 1 && v.stride[1] == 1)  // contiguous rows: plain loops the compiler vectorizes
        for (int64_t i = 0; i < v.length; ++i) put(i, binary_apply<F>(widen<Acc>(a[i]), widen<Acc>(b[i])));
      else if (v.stride[0] == 1 && v.stride[1] == 0)
        for (int64_t i = 0; i < v.length; ++i) put(i, binary_apply<F>(widen<Acc>(a[i]), widen<Acc>(b[0])));
      else
        for (int64_t i = 0; i < v.length; ++i)
          put(i, binary_apply<F>(widen<Acc>(a[i * v.stride[0]]), widen<Acc>(b[i * v.stride[1]])));
    });
  });
}

}  // namespace dew::ops::DEW_KERNEL_NS
DEW_ISA_END
