// upsample_nearest: validation, output rule, registry, cases and the public function.
#include "ops/upsample_nearest/upsample_nearest.h"

namespace dew::ops {

std::vector<OutputSpec> UpsampleNearest::infer(const Args& a) {
  require_same_device("upsample_nearest", a.inputs());
  DEW_REQUIRE(a.x.dim() == 4, "[upsample_nearest] x is {}; expected images (B,C,H,W)", a.x.describe());
  DEW_REQUIRE(a.factor >= 1, "[upsample_nearest] factor {}; expected an integer factor >= 1", a.factor);
  return {{{a.x.size(0), a.x.size(1), a.x.size(2) * a.factor, a.x.size(3) * a.factor}, a.dtype()}};
}

const select::Registry<UpsampleNearestArgs>& UpsampleNearest::registry() {
  static const select::Registry<UpsampleNearestArgs> r = [] {
    select::Registry<UpsampleNearestArgs> reg;
    add_upsample_nearest_portable(reg);
    return reg;
  }();
  return r;
}

std::vector<Case<UpsampleNearestArgs>> UpsampleNearest::cases(std::string_view) {
  auto make = [](Shape image, int64_t f) {
    return [=](DType t, RandomKey k) {
      UpsampleNearestArgs a;
      a.x = random_input(image, t, k), a.factor = f;
      return a;
    };
  };
  const std::vector<DType> all{DType::f64, DType::f32, DType::bf16, DType::f16};
  return {{"unet_up", {"ci"}, all, make({2, 3, 4, 5}, 2)},
          {"factor3", {"ci", "edge"}, all, make({1, 2, 3, 2}, 3)},
          {"identity", {"ci", "edge"}, all, make({2, 1, 3, 3}, 1)},
          {"unet_7_to_14", {"bench"}, {DType::f32, DType::bf16}, make({64, 128, 7, 7}, 2)}};
}

}  // namespace dew::ops

namespace dew {

Tensor upsample_nearest(const Tensor& x, int64_t factor) {
  ops::UpsampleNearestArgs a;
  a.x = x, a.factor = factor;
  return ops::run_op<ops::UpsampleNearest>(a)[0];
}

}  // namespace dew
