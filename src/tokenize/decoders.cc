// Decoders (decoders.h). Bytes that do not form UTF-8 become U+FFFD: for ByteLevel one per maximal
// ill-formed subpart (Rust's from_utf8_lossy), for ByteFallback one per byte (the Rust crate's rule).
#include "tokenize/decoders.h"

#include <utility>

#include "dew/error.h"
#include "io/json.h"
#include "tokenize/byte_level.h"
#include "tokenize/component.h"
#include "tokenize/normalizers.h"
#include "tokenize/utf8.h"

namespace dew::tokenize {
namespace {

constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

class ByteLevel final : public Decoder {
 public:
  void decode(std::vector<std::string>& tokens) const override {
    const ByteLevelAlphabet& alphabet = byte_level_alphabet();
    std::string bytes;
    for (const std::string& token : tokens) {
      const size_t before = bytes.size();
      size_t pos = 0;
      while (pos < token.size()) {
        const auto byte = alphabet.byte_of(next_code_point(token, pos));
        if (!byte) {  // a token outside the alphabet (an added token): its own bytes
          bytes.resize(before);
          bytes += token;
          break;
        }
        bytes += char(*byte);
      }
    }
    tokens = {make_valid_utf8(bytes)};
  }
};

class Metaspace final : public Decoder {
 public:
  Metaspace(std::string replacement, bool strip_first)
      : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  void decode(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      tokens[i] = replace_all(tokens[i], replacement_, " ");
      if (i == 0 && strip_first_ && tokens[i].starts_with(' ')) tokens[i].erase(0, 1);
    }
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

class Replace final : public Decoder {
 public:
  Replace(std::string from, std::string to) : from_(std::move(from)), to_(std::move(to)) {}
  void decode(std::vector<std::string>& tokens) const override {
    for (std::string& token : tokens) token = replace_all(token, from_, to_);
  }

 private:
  std::string from_, to_;
};

class ByteFallback final : public Decoder {
 public:
  void decode(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    size_t byte_tokens = 0;
    const auto flush = [&] {
      if (byte_tokens == 0) return;
      if (invalid_utf8_at(bytes) == std::string::npos) {
        out.push_back(bytes);
      } else {
        for (size_t i = 0; i < byte_tokens; ++i) out.emplace_back(kReplacementCharacter);
      }
      bytes.clear();
      byte_tokens = 0;
    };
    for (std::string& token : tokens) {
      const auto hex = [](char c) {
        return c >= '0' && c <= '9'   ? c - '0'
               : c >= 'A' && c <= 'F' ? c - 'A' + 10
               : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                      : -1;
      };
      if (token.size() == 6 && token.starts_with("<0x") && token[5] == '>' && hex(token[3]) >= 0 &&
          hex(token[4]) >= 0) {
        bytes += char(hex(token[3]) * 16 + hex(token[4]));
        ++byte_tokens;
        continue;
      }
      flush();
      out.push_back(std::move(token));
    }
    flush();
    tokens = std::move(out);
  }
};

class Fuse final : public Decoder {
 public:
  void decode(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const std::string& token : tokens) all += token;
    tokens = {std::move(all)};
  }
};

class Strip final : public Decoder {
 public:
  Strip(std::string content, int64_t start, int64_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void decode(std::vector<std::string>& tokens) const override {
    for (std::string& token : tokens) {
      for (int64_t i = 0; i < start_ && token.starts_with(content_); ++i) token.erase(0, content_.size());
      for (int64_t i = 0; i < stop_ && token.ends_with(content_); ++i)
        token.resize(token.size() - content_.size());
    }
  }

 private:
  std::string content_;
  int64_t start_, stop_;
};

class Sequence final : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void decode(std::vector<std::string>& tokens) const override {
    for (const auto& step : steps_) step->decode(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

}  // namespace

std::unique_ptr<Decoder> make_decoder(const nlohmann::json& spec, const std::string& source) {
  if (spec.is_null()) return nullptr;
  const ComponentKind kind = component_kind(spec, source, "decoder");  // (clang 14 cannot capture a binding)
  const std::string &type = kind.type, &here = kind.where;
  const JsonFields f{spec, here};
  if (type == "ByteLevel") return std::make_unique<ByteLevel>();
  if (type == "Metaspace") {
    const bool strip =
        f.flag_or("add_prefix_space", true) && f.text_or("prepend_scheme", "always") != "never";
    return std::make_unique<Metaspace>(f.text_or("replacement", "\xE2\x96\x81"), strip);
  }
  if (type == "Replace") {
    const auto& pattern = json_member(spec, "pattern", nlohmann::json::value_t::object, here);
    DEW_REQUIRE(pattern.contains("String"),
                "{}: \"pattern\" is {}; Dew's Replace decoder takes {{\"String\": ...}} only", here,
                pattern.dump());
    return std::make_unique<Replace>(
        json_member(pattern, "String", nlohmann::json::value_t::string, here).get<std::string>(),
        f.text_or("content", ""));
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallback>();
  if (type == "Fuse") return std::make_unique<Fuse>();
  if (type == "Strip")
    return std::make_unique<Strip>(f.text_or("content", " "), int64_t(f.number_or("start", 0)),
                                   int64_t(f.number_or("stop", 0)));
  if (type == "Sequence") {
    return std::make_unique<Sequence>(sequence_steps<Decoder>(
        spec, "decoders", here, [&](const nlohmann::json& step) { return make_decoder(step, source); }));
  }
  fail(
      "{}: not implemented by Dew (decoder types: ByteLevel, Metaspace, Replace, "
      "ByteFallback, Fuse, Strip, Sequence)",
      here);
}

}  // namespace dew::tokenize
