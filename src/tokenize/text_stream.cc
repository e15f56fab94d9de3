// TextStream (dew/tokenizer.h): decoding generated ids incrementally, with stop strings.
#include <algorithm>

#include "dew/error.h"
#include "dew/tokenizer.h"

namespace dew {

namespace {
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // what a split UTF-8 character decodes to
}

TextStream::TextStream(const Tokenizer& tokenizer, std::vector<std::string> stop_strings,
                       DecodeOptions options)
    : tokenizer_(tokenizer), stops_(std::move(stop_strings)), options_(options) {
  for (const std::string& stop : stops_)
    DEW_REQUIRE(!stop.empty(), "[generate] an empty stop string; expected text to stop at");
}

std::string TextStream::push(int64_t id) {
  if (stopped_) return {};
  ids_.push_back(id);
  text_ = tokenizer_.decode(ids_, options_);
  if (text_.size() < emitted_) return {};  // an earlier part decoded differently: wait for it to settle
  // The earliest stop string after what was returned (nothing returned can start one: see below).
  size_t stop_at = std::string::npos;
  for (const std::string& stop : stops_) stop_at = std::min(stop_at, text_.find(stop, emitted_));
  if (stop_at != std::string::npos) {
    stopped_ = true;
    std::string out = text_.substr(emitted_, stop_at - emitted_);
    emitted_ = stop_at;
    return out;
  }
  // Hold back a trailing U+FFFD (the first bytes of a character whose rest is in the next token) and
  // the longest tail that a stop string begins with.
  size_t end = text_.size();
  while (end - emitted_ >= kReplacement.size() &&
         std::string_view(text_).substr(0, end).ends_with(kReplacement))
    end -= kReplacement.size();
  size_t hold = 0;
  for (const std::string& stop : stops_)
    for (size_t n = std::min(stop.size() - 1, end - emitted_); n > hold; --n)
      if (std::string_view(text_).substr(end - n, n) == std::string_view(stop).substr(0, n)) {
        hold = n;
        break;
      }
  end -= hold;
  std::string out = text_.substr(emitted_, end - emitted_);
  emitted_ = end;
  return out;
}

std::string TextStream::finish() {
  if (stopped_ || emitted_ >= text_.size()) return {};
  std::string out = text_.substr(emitted_);
  emitted_ = text_.size();
  return out;
}

}  // namespace dew
