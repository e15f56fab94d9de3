// mix: a weighted mixture of member chains, keyed by name. Draw k picks member i with probability
// weight_i / Σ weight by a Philox draw keyed by (seed, k) — a schedule fixed by the seed, the same
// whatever was read before — and returns that member's next record. The mixture ends when a member
// it picks has ended (so proportions hold to the end); members that repeat forever never end.
#include <dew/error.h>
#include <dew/runtime.h>

#include "data/stage.h"

#include <numeric>

namespace dew::data::detail {
namespace {

class Mix : public Stage {
 public:
  Mix(std::vector<MixInput> members, uint64_t seed)
      : Stage(nullptr), members_(std::move(members)), seed_(seed) {
    double total = 0;
    for (const MixInput& m : members_) cumulative_.push_back(total += m.weight);
    for (double& c : cumulative_) c /= total;
  }
  Json describe() const override {
    Json members = Json::array();
    for (const MixInput& m : members_)
      members.push_back({{"name", m.name}, {"weight", m.weight}, {"stages", describe_stages(*m.head)}});
    return {{"stage", "mix"}, {"seed", seed_}, {"members", members}};
  }
  std::string summary() const override {
    std::string line = "mix, seed " + std::to_string(seed_) + ":";
    for (size_t i = 0; i < members_.size(); ++i)
      line += fmt::format(" {} {:.3g}%{}", members_[i].name,
                          100 * (cumulative_[i] - (i ? cumulative_[i - 1] : 0)),
                          i + 1 < members_.size() ? "," : "");
    return line + " (the mixture ends when a member it draws has ended)";
  }
  std::vector<std::pair<std::string, const Stage*>> members() const override {
    std::vector<std::pair<std::string, const Stage*>> out;
    for (const MixInput& m : members_) out.emplace_back(m.name, m.head.get());
    return out;
  }
  std::vector<std::unique_ptr<Stage>*> member_slots() override {
    std::vector<std::unique_ptr<Stage>*> out;
    for (MixInput& m : members_) out.push_back(&m.head);
    return out;
  }
  // [member 0's position..., member 1's..., draws so far]
  void save(Cursor& out) const override {
    for (const MixInput& m : members_) m.head->save(out);
    out.push_back(draws_);
  }
  size_t cursor_size() const override {
    size_t n = 1;
    for (const MixInput& m : members_) n += m.head->cursor_size();
    return n;
  }
  void restore(std::span<const int64_t> cursor) override {
    size_t at = 0;
    for (MixInput& m : members_) {
      m.head->restore(cursor.subspan(at, m.head->cursor_size()));
      at += m.head->cursor_size();
    }
    DEW_REQUIRE(cursor[at] >= 0, "[data] position: mix draw {}; expected a count", cursor[at]);
    draws_ = cursor[at];
    ended_ = false;
  }

 protected:
  std::optional<Record> next() override {
    if (ended_) return std::nullopt;
    const uint64_t k = uint64_t(draws_++);
    const auto bits = philox4x32_10({uint32_t(k), uint32_t(k >> 32), 0x6d6978u, 0},
                                    {uint32_t(seed_), uint32_t(seed_ >> 32)});
    const double u = double(uint64_t(bits[0]) << 21 ^ uint64_t(bits[1]) >> 11) * 0x1p-53;  // [0, 1)
    size_t i = size_t(std::upper_bound(cumulative_.begin(), cumulative_.end(), u) - cumulative_.begin());
    i = std::min(i, members_.size() - 1);
    std::optional<Record> r = members_[i].head->pull();
    if (!r) ended_ = true;
    return r;
  }

 private:
  std::vector<MixInput> members_;
  uint64_t seed_;
  std::vector<double> cumulative_;  // normalized running sums of the weights
  int64_t draws_ = 0;
  bool ended_ = false;
};

}  // namespace

std::unique_ptr<Stage> make_mix(std::vector<MixInput> members, uint64_t seed) {
  DEW_REQUIRE(!members.empty(), "[data] mix: no members; expected named chains with weights");
  for (size_t i = 0; i < members.size(); ++i) {
    const MixInput& m = members[i];
    DEW_REQUIRE(!m.name.empty(), "[data] mix: member {} has no name; members are keyed by name", i);
    DEW_REQUIRE(m.weight > 0 && std::isfinite(m.weight),
                "[data] mix: member {} has weight {}; expected a positive weight", m.name, m.weight);
    for (size_t j = 0; j < i; ++j)
      DEW_REQUIRE(members[j].name != m.name, "[data] mix: two members are named {}; names key the members",
                  m.name);
  }
  return std::make_unique<Mix>(std::move(members), seed);
}

}  // namespace dew::data::detail
