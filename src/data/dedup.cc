// Exact and near dedup. Both judge every record of the source in one pass when the stage is made,
// marking each record that repeats an earlier one (source order); the stage then drops marked
// records by their source index. Being a function of the index alone, it keeps no position of its
// own, and a global shuffle after it still permutes the source.
#include <dew/error.h>
#include <dew/runtime.h>
#include <xxhash.h>

#include "data/stage.h"
#include "io/files.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

namespace dew::data::detail {
namespace {

// The source under `upstream`, which must be the source or another dedup stage.
Source& source_below(Stage& upstream, const char* stage) {
  Stage* s = &upstream;
  while (s->upstream()) {
    const std::string kind = s->describe().at("stage").get<std::string>();
    DEW_REQUIRE(
        kind == "dedup" || kind == "near_dedup",
        "[data] {}: judges the source's records, so it comes right after the source (or another dedup), "
        "not after {}",
        stage, kind);
    s = s->upstream();
  }
  auto* source = dynamic_cast<Source*>(s);
  DEW_REQUIRE(source, "[data] {}: a mixture has no single source; dedup each member", stage);
  return *source;
}

// Judged lazily, on the first read: a chain served from the cache never reads this stage, and its
// pass over the source is what the cache saves.
struct Judgement {
  std::vector<bool> drop;  // by source index
  std::string outcome;     // for show()
};

class DropMarked : public Stage {
 public:
  DropMarked(std::unique_ptr<Stage> upstream, Json description, std::string summary,
             std::function<Judgement()> judge)
      : Stage(std::move(upstream)),
        description_(std::move(description)),
        summary_(std::move(summary)),
        judge_(std::move(judge)) {}
  Json describe() const override { return description_; }
  std::string summary() const override {
    return summary_ + "; " + (judged_ ? judged_->outcome : "judged when first read");
  }
  bool per_record() const override { return true; }
  bool cacheable() const override { return true; }

 protected:
  std::optional<Record> next() override {
    if (!judged_) judged_ = judge_();
    for (;;) {
      std::optional<Record> r = upstream_->pull();
      if (!r || !judged_->drop[size_t(r->index)]) return r;
      ++dropped;
    }
  }

 private:
  Json description_;
  std::string summary_;
  std::function<Judgement()> judge_;
  std::optional<Judgement> judged_;
};

// Lowercased ASCII, whitespace runs as one space, trimmed: what near-dedup compares.
std::string normalized(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
    if (space) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c;
    }
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// The hashes of the text's character n-grams (the whole text when shorter), sorted and unique.
std::vector<uint64_t> shingles(const std::string& text, int n) {
  const std::string t = normalized(text);
  std::vector<uint64_t> out;
  if (t.size() <= size_t(n)) {
    out.push_back(XXH3_64bits(t.data(), t.size()));
  } else {
    for (size_t i = 0; i + size_t(n) <= t.size(); ++i) out.push_back(XXH3_64bits(t.data() + i, size_t(n)));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

double jaccard(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  size_t common = 0;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    if (a[i] == b[j])
      ++common, ++i, ++j;
    else if (a[i] < b[j])
      ++i;
    else
      ++j;
  }
  return double(common) / double(a.size() + b.size() - common);
}

constexpr uint64_t kMersenne61 = (uint64_t(1) << 61) - 1;
__extension__ typedef unsigned __int128 Wide;

// (a x + b) mod 2^61 - 1 for a, x, b below the modulus: the universal hash behind each MinHash row.
uint64_t affine_mod(uint64_t a, uint64_t x, uint64_t b) {
  const Wide p = Wide(a) * x + b;
  uint64_t r = uint64_t(p & kMersenne61) + uint64_t(p >> 61);
  r = (r & kMersenne61) + (r >> 61);
  return r >= kMersenne61 ? r - kMersenne61 : r;
}

struct Clusters {  // union-find whose root is the cluster's smallest index
  std::vector<int64_t> parent;
  int64_t find(int64_t i) {
    while (parent[size_t(i)] != i) i = parent[size_t(i)] = parent[size_t(parent[size_t(i)])];
    return i;
  }
  void join(int64_t a, int64_t b) {
    a = find(a), b = find(b);
    if (a != b) parent[size_t(std::max(a, b))] = std::min(a, b);
  }
};

}  // namespace

std::unique_ptr<Stage> make_dedup(std::unique_ptr<Stage> upstream) {
  Source& source = source_below(*upstream, "dedup");
  auto judge = [&source] {
    Judgement j{std::vector<bool>(size_t(source.size()), false), ""};
    std::unordered_set<XXH128_hash_t, decltype([](const XXH128_hash_t& h) { return size_t(h.low64); }),
                       decltype([](const XXH128_hash_t& a, const XXH128_hash_t& b) {
                         return XXH128_isEqual(a, b);
                       })>
        seen;
    int64_t copies = 0;
    for (int64_t i = 0; i < source.size(); ++i) {
      const std::optional<Record> r = source.read(i);
      if (!r) continue;
      const XXH128_hash_t h = r->tokens.empty()
                                  ? XXH3_128bits(r->text.data(), r->text.size())
                                  : XXH3_128bits(r->tokens.data(), r->tokens.size() * sizeof(int32_t));
      if (!seen.insert(h).second) j.drop[size_t(i)] = true, ++copies;
    }
    j.outcome = fmt::format("{} later copies dropped", copies);
    return j;
  };
  return std::make_unique<DropMarked>(std::move(upstream), Json{{"stage", "dedup"}},
                                      "dedup: exact, by content hash", judge);
}

namespace {

// near_dedup's pass over every record of `source`, as the file header describes.
Judgement judge_near_duplicates(Source& source, const NearDedupOptions& o) {
  const size_t hashes = size_t(o.bands * o.rows);
  std::vector<uint64_t> a(hashes), b(hashes);  // h_j(x) = (a_j x + b_j) mod 2^61 - 1
  for (size_t j = 0; j < hashes; ++j) {
    const auto w = philox4x32_10({uint32_t(j), 0, 0, 0}, {0x6d696e68u, 0x61736821u});
    a[j] = ((uint64_t(w[0]) << 32 | w[1]) % (kMersenne61 - 1)) + 1;
    b[j] = (uint64_t(w[2]) << 32 | w[3]) % kMersenne61;
  }
  const int64_t n = source.size();
  Clusters clusters{std::vector<int64_t>(size_t(n))};
  std::iota(clusters.parent.begin(), clusters.parent.end(), int64_t(0));
  std::vector<std::unordered_map<uint64_t, std::vector<int64_t>>> buckets(size_t(o.bands));
  std::vector<uint64_t> signature(hashes);
  for (int64_t i = 0; i < n; ++i) {
    const std::optional<Record> r = source.read(i);
    if (!r) continue;
    const std::vector<uint64_t> mine = shingles(r->text, o.ngram);
    std::fill(signature.begin(), signature.end(), UINT64_MAX);
    for (uint64_t s : mine) {
      const uint64_t x = s % kMersenne61;
      for (size_t j = 0; j < hashes; ++j) signature[j] = std::min(signature[j], affine_mod(a[j], x, b[j]));
    }
    for (size_t band = 0; band < size_t(o.bands); ++band) {
      std::vector<int64_t>& bucket = buckets[band][XXH3_64bits(signature.data() + band * size_t(o.rows),
                                                               size_t(o.rows) * sizeof(uint64_t))];
      // Confirm against a few earlier members not already in this record's cluster.
      int compared = 0;
      for (int64_t j : bucket) {
        if (compared == 8) break;
        if (clusters.find(j) == clusters.find(i)) continue;
        ++compared;
        const std::optional<Record> other = source.read(j);
        if (other && jaccard(mine, shingles(other->text, o.ngram)) >= o.threshold) clusters.join(i, j);
      }
      bucket.push_back(i);
    }
  }
  std::vector<bool> drop(size_t(n), false);
  std::unordered_map<int64_t, std::vector<int64_t>> members;  // root -> dropped records
  for (int64_t i = 0; i < n; ++i)
    if (clusters.find(i) != i) drop[size_t(i)] = true, members[clusters.find(i)].push_back(i);
  if (!o.clusters_path.empty()) {
    std::vector<int64_t> roots;
    for (const auto& [root, dropped] : members) roots.push_back(root);
    std::sort(roots.begin(), roots.end());
    AtomicFile file(o.clusters_path);
    for (int64_t root : roots) {
      Json line = {{"kept", source.read(root)->origin}, {"dropped", Json::array()}};
      for (int64_t j : members[root]) line["dropped"].push_back(source.read(j)->origin);
      const std::string text = line.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
      file.write(text.data(), text.size());
    }
    file.commit();
  }
  int64_t dropped = 0;
  for (const auto& [root, list] : members) dropped += int64_t(list.size());
  return {std::move(drop), fmt::format("{} clusters, {} records dropped", members.size(), dropped)};
}

}  // namespace

std::unique_ptr<Stage> make_near_dedup(std::unique_ptr<Stage> upstream, const NearDedupOptions& o) {
  DEW_REQUIRE(
      o.ngram >= 1 && o.bands >= 1 && o.rows >= 1 && o.bands * o.rows <= 1024,
      "[data] near_dedup: ngram {}, bands {}, rows {}; expected positive values, bands x rows <= 1024",
      o.ngram, o.bands, o.rows);
  DEW_REQUIRE(o.threshold > 0 && o.threshold <= 1,
              "[data] near_dedup: threshold {}; expected a Jaccard in (0, 1]", o.threshold);
  Source& source = source_below(*upstream, "near_dedup");
  Json d = {{"stage", "near_dedup"},
            {"ngram", o.ngram},
            {"bands", o.bands},
            {"rows", o.rows},
            {"threshold", o.threshold}};
  return std::make_unique<DropMarked>(
      std::move(upstream), std::move(d),
      fmt::format("near_dedup: MinHash of {}-grams, {} bands x {} rows, Jaccard >= {}", o.ngram, o.bands,
                  o.rows, o.threshold),
      [&source, o] { return judge_near_duplicates(source, o); });
}

}  // namespace dew::data::detail
