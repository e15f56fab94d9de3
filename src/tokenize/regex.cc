// Oniguruma patterns on PCRE2 (regex.h).
#include "tokenize/regex.h"

#include <algorithm>
#include <cstdint>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cctype>

#include "dew/error.h"
#include "tokenize/utf8.h"

namespace dew::tokenize {

namespace {

// A pattern quoted for a message: whole when short, else its first 160 bytes (at a character
// boundary) and its length, so that a huge pattern does not become a huge message.
std::string excerpt(std::string_view pattern) {
  constexpr size_t kShown = 160;
  if (pattern.size() <= kShown) return fmt::format("{:?}", pattern);
  size_t cut = kShown;
  while (cut > 0 && (static_cast<unsigned char>(pattern[cut]) & 0xC0) == 0x80) --cut;
  return fmt::format("{:?}... ({} bytes)", pattern.substr(0, cut), pattern.size());
}

}  // namespace

// NOTE [Oniguruma on PCRE2]
// The Hugging Face tokenizers compile patterns with Oniguruma (Ruby syntax, Unicode). PCRE2 with
// PCRE2_UTF | PCRE2_UCP agrees on \p{..} classes, \d (= \p{Nd}), quantifiers, look-around and
// (?i:...), and with PCRE2_MULTILINE on ^ and $ as line anchors. It differs on:
// - \s: PCRE2 adds U+180E (and in some versions misses U+0085); Oniguruma's \s is exactly Unicode's
//   White_Space, so \s and \S are spelled out as that set.
// - \w: Oniguruma's word characters are Alphabetic, marks, decimal digits and connector punctuation.
// - \h: a hexadecimal digit in Oniguruma, horizontal space in PCRE2.
// Nested character classes ([a[b]]) and set operations (&&) exist only in Oniguruma: refused.
namespace {

constexpr std::string_view kWhiteSpaceSet =
    "\\x{9}-\\x{d}\\x{20}\\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}"
    "\\x{205f}\\x{3000}";
constexpr std::string_view kWordSet = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}";
constexpr std::string_view kHexSet = "0-9A-Fa-f";

std::string to_pcre2(const std::string& pattern, const std::string& source) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      const char e = pattern[++i];
      std::string_view set = e == 's' || e == 'S'   ? kWhiteSpaceSet
                             : e == 'w' || e == 'W' ? kWordSet
                             : e == 'h' || e == 'H' ? kHexSet
                                                    : std::string_view{};
      if (set.empty()) {
        out += c;
        out += e;
      } else if (!in_class) {
        out += std::islower(static_cast<unsigned char>(e)) ? "[" : "[^";
        out.append(set);
        out += ']';
      } else if (std::islower(static_cast<unsigned char>(e))) {
        out.append(set);
      } else {
        throw Error(
            fmt::format("{}: the pattern {} uses \\{} inside a character class, which "
                        "Dew cannot translate from Oniguruma to PCRE2; write the class without it",
                        source, excerpt(pattern), e));
      }
      continue;
    }
    if (in_class && c == '[' && i + 1 < pattern.size() && pattern[i + 1] != ':') {
      throw Error(
          fmt::format("{}: the pattern {} nests a character class (an Oniguruma "
                      "extension PCRE2 does not have); supported: flat classes",
                      source, excerpt(pattern)));
    }
    if (in_class && c == '&' && i + 1 < pattern.size() && pattern[i + 1] == '&') {
      throw Error(
          fmt::format("{}: the pattern {} intersects classes with && (an Oniguruma "
                      "extension PCRE2 does not have)",
                      source, excerpt(pattern)));
    }
    out += c;
    if (!in_class && c == '[') {
      in_class = true;
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];  // a literal ] first
    } else if (in_class && c == ']') {
      in_class = false;
    }
  }
  return out;
}

}  // namespace

struct Regex::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

Regex::Regex(const std::string& pattern, const std::string& source)
    : compiled_(std::make_unique<Compiled>()) {
  const std::string translated = to_pcre2(pattern, source);
  int error = 0;
  PCRE2_SIZE offset = 0;
  compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                                  PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &error, &offset, nullptr);
  if (compiled_->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    throw Error(fmt::format("{}: the pattern {} does not compile: {} (at byte {}{})", source,
                            excerpt(pattern), reinterpret_cast<const char*>(message), offset,
                            translated == pattern ? "" : " of its PCRE2 form " + excerpt(translated)));
  }
  pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE);  // without a JIT, matching interprets
}

Regex::~Regex() = default;

namespace {

// What a match needs besides the pattern, made once per thread (a JIT stack is an mmap: making one
// per call cost more than the matching on short lines). One ovector pair suffices: only the whole
// match is read, and PCRE2 fills it even when the pattern has more groups (rc == 0).
struct MatchScratch {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  // Long runs of one class (a page of spaces under \s+(?!\S)) backtrack deeper than the JIT's
  // default 32 KiB stack allows.
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  MatchScratch() { pcre2_jit_stack_assign(context, nullptr, stack); }
  ~MatchScratch() {
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
    pcre2_match_data_free(data);
  }
};

}  // namespace

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  thread_local MatchScratch scratch;
  // PCRE2's default match limit (10 million steps) refuses valid long texts (10 MB of spaces under
  // \s+(?!\S) is one match); a limit that grows with the text still stops a pattern that backtracks
  // without end.
  pcre2_set_match_limit(scratch.context,
                        uint32_t(std::min<size_t>(UINT32_MAX, 10'000'000 + 64 * text.size())));
  std::vector<std::pair<size_t, size_t>> spans;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  int rc = 0;
  while (start <= text.size()) {
    rc = pcre2_match(compiled_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, scratch.data,
                     scratch.context);
    if (rc < 0) break;
    const PCRE2_SIZE* vector = pcre2_get_ovector_pointer(scratch.data);
    const size_t begin = vector[0], end = vector[1];
    if (end > begin) {
      spans.emplace_back(begin, end);
      start = end;
    } else {
      if (begin >= text.size()) break;
      start = begin + utf8_length(static_cast<unsigned char>(text[begin]));
    }
  }
  if (rc < 0 && rc != PCRE2_ERROR_NOMATCH) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(rc, message, sizeof message);
    throw Error(fmt::format("[tokenizer] matching a pattern failed: {} (text of {} bytes)",
                            reinterpret_cast<const char*>(message), text.size()));
  }
  return spans;
}

std::string escape_regex(std::string_view literal) {
  std::string out;
  for (char c : literal) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace dew::tokenize
