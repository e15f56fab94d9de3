// The sandbox a chat template runs in: transformers renders templates in Jinja2's sandboxed
// environment, whose range() stops at 100,000 items; Dew bounds the rest too, so that no template, however
// hostile, can take unbounded time or memory. Each limit is far past what a chat template needs.
#pragma once

#include <cstddef>
#include <cstdint>

#include "dew/error.h"

namespace dew::jinja {

inline constexpr int64_t kMaxRange = 100'000;              // items of one range(), as Jinja2's sandbox
inline constexpr size_t kMaxTextBytes = size_t(64) << 20;  // any string built, and the whole output
inline constexpr size_t kMaxListItems = 1'000'000;         // any list built by + or *
inline constexpr int64_t kMaxIndent = 1'000;               // indent and tojson(indent=) widths
inline constexpr int64_t kMaxSteps = 5'000'000;            // statements and expressions per render

inline void check_text_size(size_t bytes, const char* what) {
  DEW_REQUIRE(bytes <= kMaxTextBytes, "{} would be {} bytes; the sandbox allows at most {}", what, bytes,
              kMaxTextBytes);
}
inline void check_list_size(size_t items, const char* what) {
  DEW_REQUIRE(items <= kMaxListItems, "{} would hold {} items; the sandbox allows at most {}", what, items,
              kMaxListItems);
}

}  // namespace dew::jinja
