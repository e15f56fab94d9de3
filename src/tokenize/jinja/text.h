// Python's str operations over UTF-8, as chat templates call them (as methods or through filters):
// whitespace is Python's (str.isspace), case mapping is Unicode's simple one per code point.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dew::jinja {

bool is_python_space(char32_t code_point);

// str.strip / lstrip / rstrip: `chars` absent means whitespace.
std::string strip_text(std::string_view text, std::optional<std::string_view> chars, bool left, bool right);
// str.split(sep, maxsplit): `sep` absent splits on whitespace runs and drops empty parts; maxsplit < 0
// means no limit. `from_right` is str.rsplit.
std::vector<std::string> split_text(std::string_view text, std::optional<std::string_view> sep,
                                    int64_t maxsplit, bool from_right = false);
std::string upper_text(std::string_view text);
std::string lower_text(std::string_view text);
std::string capitalize_text(std::string_view text);  // first code point upper, the rest lower
// str.title: a letter after a non-letter goes upper, other letters lower ("they're" → "They'Re").
std::string title_text(std::string_view text);
// Jinja's title filter (not str.title): each word, split at white space and -({[<, capitalized
// ("they're" → "They're").
std::string title_words(std::string_view text);

enum class CharClass { space, digit, alpha, alnum };
// str.isspace / isdigit / isalpha / isalnum: a non-empty text whose every code point is white space, a
// decimal digit (Nd), a letter (L*), or either.
bool all_in_class(std::string_view text, CharClass kind);

// str.replace(old, new, count): count < 0 replaces all.
std::string replace_text(std::string_view text, std::string_view old, std::string_view replacement,
                         int64_t count);

}  // namespace dew::jinja
