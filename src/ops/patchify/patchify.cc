// patchify and unpatchify: validation, output rules, registry, cases and the public functions.
#include "ops/patchify/patchify.h"

namespace dew::ops {

std::vector<OutputSpec> Patchify::infer(const Args& a) {
  const char* op = name(a).data();
  require_same_device(op, a.inputs());
  DEW_REQUIRE(a.patch >= 1, "[{}] patch size {}; expected at least 1", op, a.patch);
  const int64_t p = a.patch;
  if (!a.inverse) {
    DEW_REQUIRE(a.x.dim() == 4, "[patchify] x is {}; expected images (B,C,H,W)", a.x.describe());
    const int64_t B = a.x.size(0), C = a.x.size(1), H = a.x.size(2), W = a.x.size(3);
    DEW_REQUIRE(H % p == 0 && W % p == 0,
                "[patchify] images of {}x{} pixels; expected H and W multiples of the patch size {}", H, W,
                p);
    return {{{B, (H / p) * (W / p), C * p * p}, a.dtype()}};
  }
  DEW_REQUIRE(a.x.dim() == 3, "[unpatchify] x is {}; expected patch tokens (B,T,C p p)", a.x.describe());
  DEW_REQUIRE(a.height > 0 && a.width > 0 && a.height % p == 0 && a.width % p == 0,
              "[unpatchify] an image of {}x{} pixels; expected H and W > 0, multiples of the patch size {}",
              a.height, a.width, p);
  const int64_t B = a.x.size(0), T = (a.height / p) * (a.width / p);
  DEW_REQUIRE(a.x.size(1) == T && a.x.size(2) % (p * p) == 0,
              "[unpatchify] x is {}; expected {} tokens ({}x{} pixels in patches of {}) of C*{} values",
              a.x.describe(), T, a.height, a.width, p, p * p);
  return {{{B, a.x.size(2) / (p * p), a.height, a.width}, a.dtype()}};
}

const select::Registry<PatchifyArgs>& Patchify::registry() {
  static const select::Registry<PatchifyArgs> r = [] {
    select::Registry<PatchifyArgs> reg;
    add_patchify_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<PatchifyArgs>> Patchify::cases(std::string_view op) {
  const bool inverse = op == "unpatchify";
  auto make = [=](Shape image, int64_t p) {
    return [=](DType t, RandomKey k) {
      PatchifyArgs a;
      a.patch = p, a.inverse = inverse;
      const int64_t T = (image[2] / p) * (image[3] / p);
      a.x = random_input(inverse ? Shape{image[0], T, image[1] * p * p} : image, t, k);
      if (inverse) a.height = image[2], a.width = image[3];
      return a;
    };
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  return {{"dit_small", {"ci"}, all, make({2, 3, 8, 8}, 2)},
          {"wide_patch4", {"ci", "edge"}, all, make({1, 2, 8, 12}, 4)},
          {"patch1", {"ci", "edge"}, all, make({2, 1, 3, 5}, 1)},
          {"fashion_batch", {"bench"}, {DType::f32, DType::bf16}, make({256, 1, 28, 28}, 2)}};
}

}  // namespace dew::ops

namespace dew {

Tensor patchify(const Tensor& images, int64_t patch) {
  ops::PatchifyArgs a;
  a.x = images, a.patch = patch;
  return ops::run_op<ops::Patchify>(a)[0];
}

Tensor unpatchify(const Tensor& tokens, int64_t patch, int64_t height, int64_t width) {
  ops::PatchifyArgs a;
  a.x = tokens, a.patch = patch, a.height = height, a.width = width, a.inverse = true;
  return ops::run_op<ops::Patchify>(a)[0];
}

}  // namespace dew
