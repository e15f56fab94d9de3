// Binary ops, portable: every dtype at baseline x86-64.
#define DEW_KERNEL_NS portable
#include "ops/binary/kernels.h"

namespace dew::ops {

void add_binary_portable(select::Registry<BinaryArgs>& r) {
  r.add({"portable", {select::on_cpu<BinaryArgs>()}, [](const BinaryArgs& a, std::vector<Tensor>& outs) {
           visit_dtype(a.dtype(), [&](auto zero) { portable::binary_rows<decltype(zero)>(a, outs[0]); });
         }});
}

}  // namespace dew::ops
