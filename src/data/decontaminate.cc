// decontaminate: drops every document that shares a word n-gram (13 by default, as GPT-3's report
// did) with held-out files, so that evaluation text does not leak into training. Words are runs of
// ASCII letters and digits (lowercased) and of non-ASCII bytes; the held-out files' content hashes
// are part of the chain's description.
#include <dew/error.h>
#include <xxhash.h>

#include "data/files.h"

#include <unordered_set>

namespace dew::data::detail {
namespace {

// Calls on_gram(hash) for each run of n consecutive words of `text`.
template <class F>
void for_each_word_gram(std::string_view text, int n, F&& on_gram) {
  std::vector<std::string> words;
  std::string word;
  for (size_t i = 0; i <= text.size(); ++i) {
    const unsigned char c = i < text.size() ? static_cast<unsigned char>(text[i]) : ' ';
    const bool in_word =
        c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (in_word) {
      word += (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : char(c);
    } else if (!word.empty()) {
      words.push_back(std::move(word));
      word.clear();
    }
  }
  std::string gram;
  for (size_t start = 0; start + size_t(n) <= words.size(); ++start) {
    gram.clear();
    for (size_t k = 0; k < size_t(n); ++k) (gram += words[start + k]) += ' ';
    on_gram(XXH3_64bits(gram.data(), gram.size()));
  }
}

}  // namespace

std::unique_ptr<Stage> make_decontaminate(std::unique_ptr<Stage> upstream,
                                          const std::vector<std::string>& held_out, int n) {
  DEW_REQUIRE(n >= 1 && n <= 64, "[data] decontaminate: n = {}; expected 1 to 64 words", n);
  const SourceFiles files(held_out, "decontaminate's held-out set");
  auto grams = std::make_shared<std::unordered_set<uint64_t>>();
  for (size_t f = 0; f < files.size(); ++f) {
    const MappedFile& file = files.file(f);
    for_each_word_gram({reinterpret_cast<const char*>(file.data()), file.size()}, n,
                       [&](uint64_t h) { grams->insert(h); });
  }
  Json d = {{"stage", "decontaminate"}, {"n", n}, {"held_out", files.describe()}};
  return make_described_filter(std::move(upstream), std::move(d), [grams, n](const Record& r) {
    bool shared = false;
    for_each_word_gram(r.text, n, [&](uint64_t h) { shared = shared || grams->count(h) > 0; });
    return !shared;
  });
}

}  // namespace dew::data::detail
