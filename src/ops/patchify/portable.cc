// patchify and unpatchify, portable: one strided copy between the image seen as (B, H/p, W/p, C, p, p)
// and the contiguous tokens (any dtype).
#include "core/strided.h"
#include "ops/patchify/patchify.h"

namespace dew::ops {

Tensor patch_view(const Tensor& image, int64_t p) {
  const int64_t B = image.size(0), C = image.size(1), H = image.size(2), W = image.size(3);
  return image.reshape({B, C, H / p, p, W / p, p}).permute({0, 2, 4, 1, 3, 5});
}

void add_patchify_portable(select::Registry<PatchifyArgs>& r) {
  r.add({"portable", {select::on_cpu<PatchifyArgs>()}, [](const PatchifyArgs& a, std::vector<Tensor>& outs) {
           const int64_t p = a.patch;
           if (!a.inverse) {
             const Tensor image = patch_view(a.x.contiguous(), p);
             detail::copy_strided(image, outs[0].reshape(image.shape()));
             return;
           }
           const Tensor image = patch_view(outs[0], p);
           detail::copy_strided(a.x.contiguous().reshape(image.shape()), image);
         }});
}

}  // namespace dew::ops
