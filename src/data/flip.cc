// The random horizontal flip of image records: record i of epoch e is mirrored left to right when
// Philox keyed by the seed, at counter (e, i), draws under the probability — so the same image flips
// differently across epochs, and a resumed or reshuffled chain flips exactly as before. It keeps
// nothing between records (its position is its upstream's) and depends on the epoch, so no cache
// stores it.
#include <dew/error.h>
#include <dew/runtime.h>

#include "data/stage.h"

#include <algorithm>

namespace dew::data::detail {
namespace {

constexpr uint32_t kFlipStream = 0x666c6970;  // "flip": the stream of this stage's draws

class FlipHorizontal : public Stage {
 public:
  FlipHorizontal(std::unique_ptr<Stage> upstream, uint64_t seed, double probability)
      : Stage(std::move(upstream)), seed_(seed), probability_(probability) {}
  Json describe() const override {
    return {{"stage", "flip_horizontal"}, {"seed", seed_}, {"probability", probability_}};
  }
  bool per_record() const override { return true; }

 protected:
  std::optional<Record> next() override {
    std::optional<Record> r = upstream_->pull();
    if (!r) return r;
    DEW_REQUIRE(!r->pixels.empty(),
                "[data] flip_horizontal: {} is not an image; the stage flips image records", r->origin);
    const auto draw = philox4x32_10({uint32_t(r->epoch), uint32_t(uint64_t(r->epoch) >> 32),
                                     uint32_t(r->index), uint32_t(uint64_t(r->index) >> 32)},
                                    {uint32_t(seed_) ^ kFlipStream, uint32_t(seed_ >> 32)});
    if (double(draw[0]) / 4294967296.0 < probability_) {
      const int64_t W = r->width;
      for (int64_t row = 0; row < r->channels * r->height; ++row)
        std::reverse(r->pixels.begin() + row * W, r->pixels.begin() + (row + 1) * W);
    }
    return r;
  }

 private:
  uint64_t seed_;
  double probability_;
};

}  // namespace

std::unique_ptr<Stage> make_flip_horizontal(std::unique_ptr<Stage> upstream, uint64_t seed,
                                            double probability) {
  DEW_REQUIRE(probability >= 0 && probability <= 1, "[data] flip_horizontal: probability {}; expected 0 to 1",
              probability);
  return std::make_unique<FlipHorizontal>(std::move(upstream), seed, probability);
}

}  // namespace dew::data::detail
