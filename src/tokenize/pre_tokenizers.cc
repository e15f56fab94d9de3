// The pre-tokenizers of tokenizer.json (pre_tokenizers.h), with the semantics of the Rust tokenizers
// crate (its SplitDelimiterBehavior for every split).
#include "tokenize/pre_tokenizers.h"

#include <utf8proc.h>

#include <functional>
#include <utility>

#include "dew/error.h"
#include "io/json.h"
#include "tokenize/byte_level.h"
#include "tokenize/component.h"
#include "tokenize/normalizers.h"
#include "tokenize/regex.h"
#include "tokenize/utf8.h"

namespace dew::tokenize {
namespace {

enum class Behavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

using Span = std::pair<size_t, size_t>;

// `text` cut at the matched spans, the pieces kept, dropped or glued as `behavior` says (Rust's
// NormalizedString::split). Empty pieces never come out.
void split_at_matches(const std::string& text, const std::vector<Span>& matches, bool invert,
                      Behavior behavior, std::vector<std::string>& out) {
  std::vector<std::pair<Span, bool>> parts;  // the whole text as alternating (span, is_match)
  size_t done = 0;
  for (auto [start, end] : matches) {
    if (start > done) parts.push_back({{done, start}, invert});
    parts.push_back({{start, end}, !invert});
    done = end;
  }
  if (done < text.size()) parts.push_back({{done, text.size()}, invert});

  std::vector<Span> pieces;
  bool previous_was_match = false;
  for (auto [span, is_match] : parts) {
    switch (behavior) {
      case Behavior::removed:
        if (!is_match) pieces.push_back(span);
        break;
      case Behavior::isolated:
        pieces.push_back(span);
        break;
      case Behavior::merged_with_previous:
        if (is_match && !pieces.empty() && !previous_was_match) {
          pieces.back().second = span.second;
        } else {
          pieces.push_back(span);
        }
        break;
      case Behavior::merged_with_next:
        pieces.push_back(span);  // glued below, walking backwards as Rust does
        break;
      case Behavior::contiguous:
        if (is_match && previous_was_match) {
          pieces.back().second = span.second;
        } else {
          pieces.push_back(span);
        }
        break;
    }
    previous_was_match = is_match;
  }
  if (behavior == Behavior::merged_with_next) {
    // From the end: a match whose successor is not a match starts that successor's piece (so in a run
    // of matches only the last one joins the text after it).
    std::vector<Span> glued;
    bool next_was_match = false;
    for (size_t i = parts.size(); i-- > 0;) {
      const auto [span, is_match] = parts[i];
      if (is_match && !next_was_match && !glued.empty()) {
        glued.back().first = span.first;
      } else {
        glued.push_back(span);
      }
      next_was_match = is_match;
    }
    pieces.assign(glued.rbegin(), glued.rend());
  }
  for (auto [start, end] : pieces)
    if (end > start) out.push_back(text.substr(start, end - start));
}

// Applies `split_one` to every piece, in order.
void split_each(std::vector<std::string>& pieces,
                const std::function<void(const std::string&, std::vector<std::string>&)>& split_one) {
  std::vector<std::string> out;
  out.reserve(pieces.size());
  for (const std::string& piece : pieces) split_one(piece, out);
  pieces = std::move(out);
}

// The spans of maximal runs of code points for which `member` holds (or, with single, of each one).
std::vector<Span> code_point_runs(const std::string& text, bool (*member)(char32_t), bool single) {
  std::vector<Span> spans;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = pos;
    if (!member(next_code_point(text, pos))) continue;
    size_t end = pos;
    while (!single && end < text.size()) {
      size_t next = end;
      if (!member(next_code_point(text, next))) break;
      end = next;
    }
    spans.push_back({start, end});
    pos = end;
  }
  return spans;
}

bool is_numeric(char32_t c) {  // Rust's char::is_numeric: general categories Nd, Nl, No
  const auto category = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return category == UTF8PROC_CATEGORY_ND || category == UTF8PROC_CATEGORY_NL ||
         category == UTF8PROC_CATEGORY_NO;
}

class Split final : public PreTokenizer {
 public:
  Split(const std::string& pattern, Behavior behavior, bool invert, const std::string& source)
      : regex_(pattern, source), behavior_(behavior), invert_(invert) {}
  void split(std::vector<std::string>& pieces, bool) const override {
    split_each(pieces, [&](const std::string& piece, std::vector<std::string>& out) {
      split_at_matches(piece, regex_.find_all(piece), invert_, behavior_, out);
    });
  }

 private:
  Regex regex_;
  Behavior behavior_;
  bool invert_;
};

// GPT-2's pattern, as the Rust crate's ByteLevel pre-tokenizer writes it.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex, const std::string& source)
      : add_prefix_space_(add_prefix_space),
        regex_(use_regex ? std::make_unique<Regex>(kGpt2Pattern, source) : nullptr) {}
  void split(std::vector<std::string>& pieces, bool) const override {
    const ByteLevelAlphabet& alphabet = byte_level_alphabet();
    split_each(pieces, [&](const std::string& original, std::vector<std::string>& out) {
      const std::string piece = add_prefix_space_ && original[0] != ' ' ? " " + original : original;
      if (!regex_) {
        out.push_back(alphabet.encode(piece));
        return;
      }
      for (auto [start, end] : regex_->find_all(piece))
        out.push_back(alphabet.encode(std::string_view(piece).substr(start, end - start)));
    });
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;
};

class Metaspace final : public PreTokenizer {
 public:
  enum class Prepend { always, first, never };
  Metaspace(std::string replacement, Prepend prepend, bool split)
      : replacement_(std::move(replacement)), prepend_(prepend), split_(split) {}
  void split(std::vector<std::string>& pieces, bool at_start) const override {
    split_each(pieces, [&](const std::string& piece, std::vector<std::string>& out) {
      std::string text = replace_all(piece, " ", replacement_);
      const bool prepend = prepend_ == Prepend::always || (prepend_ == Prepend::first && at_start);
      if (prepend && !text.starts_with(replacement_)) text = replacement_ + text;
      if (!split_) {
        out.push_back(std::move(text));
        return;
      }
      std::vector<Span> matches;
      for (size_t at = text.find(replacement_); at != std::string::npos; at = text.find(replacement_, at + 1))
        matches.push_back({at, at + replacement_.size()});
      split_at_matches(text, matches, false, Behavior::merged_with_next, out);
    });
  }

 private:
  std::string replacement_;
  Prepend prepend_;
  bool split_;
};

class Digits final : public PreTokenizer {
 public:
  explicit Digits(bool individual) : individual_(individual) {}
  void split(std::vector<std::string>& pieces, bool) const override {
    split_each(pieces, [&](const std::string& piece, std::vector<std::string>& out) {
      split_at_matches(piece, code_point_runs(piece, is_numeric, individual_), false,
                       individual_ ? Behavior::isolated : Behavior::contiguous, out);
    });
  }

 private:
  bool individual_;
};

class WhitespaceSplit final : public PreTokenizer {
 public:
  void split(std::vector<std::string>& pieces, bool) const override {
    split_each(pieces, [&](const std::string& piece, std::vector<std::string>& out) {
      split_at_matches(piece, code_point_runs(piece, is_white_space, false), false, Behavior::removed, out);
    });
  }
};

class Sequence final : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  void split(std::vector<std::string>& pieces, bool at_start) const override {
    for (const auto& step : steps_) step->split(pieces, at_start);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

Behavior parse_behavior(const std::string& name, const std::string& where) {
  if (name == "Removed") return Behavior::removed;
  if (name == "Isolated") return Behavior::isolated;
  if (name == "MergedWithPrevious") return Behavior::merged_with_previous;
  if (name == "MergedWithNext") return Behavior::merged_with_next;
  if (name == "Contiguous") return Behavior::contiguous;
  fail(
      "{}: \"behavior\" is \"{}\"; expected Removed, Isolated, MergedWithPrevious, MergedWithNext or "
      "Contiguous",
      where, name);
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& spec, const std::string& source) {
  if (spec.is_null()) return nullptr;
  const ComponentKind kind =
      component_kind(spec, source, "pre_tokenizer");  // (clang 14 cannot capture a binding)
  const std::string &type = kind.type, &here = kind.where;
  const JsonFields f{spec, here};
  if (type == "Split") {
    const auto& pattern = json_member(spec, "pattern", nlohmann::json::value_t::object, here);
    std::string regex;
    if (pattern.contains("String")) {
      regex = escape_regex(
          json_member(pattern, "String", nlohmann::json::value_t::string, here).get<std::string>());
    } else {
      regex = json_member(pattern, "Regex", nlohmann::json::value_t::string, here).get<std::string>();
    }
    return std::make_unique<Split>(regex, parse_behavior(f.text_or("behavior", "Isolated"), here),
                                   f.flag_or("invert", false), here);
  }
  if (type == "ByteLevel")
    return std::make_unique<ByteLevel>(f.flag_or("add_prefix_space", true), f.flag_or("use_regex", true),
                                       here);
  if (type == "Metaspace") {
    // Older files say add_prefix_space (true: always); newer ones prepend_scheme.
    std::string scheme = f.flag_or("add_prefix_space", true) ? "always" : "never";
    scheme = f.text_or("prepend_scheme", scheme);
    DEW_REQUIRE(scheme == "always" || scheme == "first" || scheme == "never",
                "{}: \"prepend_scheme\" is \"{}\"; expected always, first or never", here, scheme);
    return std::make_unique<Metaspace>(f.text_or("replacement", "\xE2\x96\x81"),
                                       scheme == "always"  ? Metaspace::Prepend::always
                                       : scheme == "first" ? Metaspace::Prepend::first
                                                           : Metaspace::Prepend::never,
                                       f.flag_or("split", true));
  }
  if (type == "Digits") return std::make_unique<Digits>(f.flag_or("individual_digits", false));
  if (type == "WhitespaceSplit") return std::make_unique<WhitespaceSplit>();
  if (type == "Sequence") {
    return std::make_unique<Sequence>(sequence_steps<PreTokenizer>(
        spec, "pretokenizers", here,
        [&](const nlohmann::json& step) { return make_pre_tokenizer(step, source); }));
  }
  fail(
      "{}: not implemented by Dew (pre-tokenizer types: Split, ByteLevel, Metaspace, "
      "Digits, WhitespaceSplit, Sequence)",
      here);
}

}  // namespace dew::tokenize
