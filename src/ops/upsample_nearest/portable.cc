// upsample_nearest, portable: one strided copy from the image seen as (B, C, H, f, W, f) with zero
// strides over the repeats (any dtype).
#include "core/strided.h"
#include "ops/upsample_nearest/upsample_nearest.h"

namespace dew::ops {

void add_upsample_nearest_portable(select::Registry<UpsampleNearestArgs>& r) {
  r.add({"portable",
         {select::on_cpu<UpsampleNearestArgs>()},
         [](const UpsampleNearestArgs& a, std::vector<Tensor>& outs) {
           const int64_t B = a.x.size(0), C = a.x.size(1), H = a.x.size(2), W = a.x.size(3), f = a.factor;
           const Shape blocks{B, C, H, f, W, f};
           detail::copy_strided(a.x.contiguous().reshape({B, C, H, 1, W, 1}).expand(blocks),
                                outs[0].reshape(blocks));
         }});
}

}  // namespace dew::ops
