// Unary ops, portable: every floating dtype at baseline x86-64, libm's functions.
#define DEW_KERNEL_NS portable
#include "ops/unary/kernels.h"

namespace dew::ops {

void add_unary_portable(select::Registry<UnaryArgs>& r) {
  r.add({"portable", {select::on_cpu<UnaryArgs>()}, [](const UnaryArgs& a, std::vector<Tensor>& outs) {
           visit_floating(a.dtype(),
                          [&](auto zero) { portable::unary_rows<false, decltype(zero)>(a, outs[0]); });
         }});
}

}  // namespace dew::ops
