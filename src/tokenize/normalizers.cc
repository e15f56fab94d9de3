// The normalizers of tokenizer.json (normalizers.h), with the semantics of the Rust tokenizers crate.
#include "tokenize/normalizers.h"

#include <utf8proc.h>

#include <cstdlib>
#include <vector>

#include "dew/error.h"
#include "io/json.h"
#include "tokenize/component.h"
#include "tokenize/regex.h"
#include "tokenize/utf8.h"

namespace dew::tokenize {
namespace {

class UnicodeForm final : public Normalizer {
 public:
  explicit UnicodeForm(utf8proc_option_t options) : options_(options) {}
  std::string normalize(std::string_view text) const override {
    bool ascii = true;
    for (char c : text) ascii &= static_cast<unsigned char>(c) < 0x80;
    if (ascii) return std::string(text);  // every form leaves ASCII as it is
    utf8proc_uint8_t* out = nullptr;
    const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                            static_cast<utf8proc_ssize_t>(text.size()), &out, options_);
    DEW_REQUIRE(n >= 0, "[tokenizer] Unicode normalization failed: {}", utf8proc_errmsg(n));
    std::string result(reinterpret_cast<const char*>(out), static_cast<size_t>(n));
    std::free(out);
    return result;
  }

 private:
  utf8proc_option_t options_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string normalize(std::string_view text) const override {
    return text.empty() ? std::string() : prefix_ + std::string(text);
  }

 private:
  std::string prefix_;
};

class ReplaceString final : public Normalizer {
 public:
  ReplaceString(std::string from, std::string to) : from_(std::move(from)), to_(std::move(to)) {}
  std::string normalize(std::string_view text) const override { return replace_all(text, from_, to_); }

 private:
  std::string from_, to_;
};

class ReplaceRegex final : public Normalizer {
 public:
  ReplaceRegex(const std::string& pattern, std::string to, const std::string& source)
      : regex_(pattern, source), to_(std::move(to)) {}
  std::string normalize(std::string_view text) const override {
    std::string out;
    size_t done = 0;
    for (auto [start, end] : regex_.find_all(text)) {
      out.append(text.substr(done, start - done));
      out += to_;
      done = end;
    }
    out.append(text.substr(done));
    return out;
  }

 private:
  Regex regex_;
  std::string to_;
};

class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  std::string normalize(std::string_view text) const override {
    if (left_) text = trim_start(text);
    if (right_) text = trim_end(text);
    return std::string(text);
  }

 private:
  bool left_, right_;
};

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  std::string normalize(std::string_view text) const override {
    std::string current(text);
    for (const auto& step : steps_) current = step->normalize(current);
    return current;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  if (from.empty()) return std::string(text);
  std::string out;
  size_t done = 0;
  for (size_t at = text.find(from); at != std::string_view::npos; at = text.find(from, done)) {
    out.append(text.substr(done, at - done));
    out.append(to);
    done = at + from.size();
  }
  out.append(text.substr(done));
  return out;
}

std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& spec, const std::string& source) {
  if (spec.is_null()) return nullptr;
  const ComponentKind kind =
      component_kind(spec, source, "normalizer");  // (clang 14 cannot capture a binding)
  const std::string &type = kind.type, &here = kind.where;
  const JsonFields f{spec, here};
  if (type == "NFC")
    return std::make_unique<UnicodeForm>(utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (type == "NFD")
    return std::make_unique<UnicodeForm>(utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE));
  if (type == "NFKC")
    return std::make_unique<UnicodeForm>(
        utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT));
  if (type == "NFKD")
    return std::make_unique<UnicodeForm>(
        utf8proc_option_t(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT));
  if (type == "Prepend") return std::make_unique<Prepend>(f.text_or("prepend", ""));
  if (type == "Strip")
    return std::make_unique<Strip>(f.flag_or("strip_left", true), f.flag_or("strip_right", true));
  if (type == "Replace") {
    const auto& pattern = json_member(spec, "pattern", nlohmann::json::value_t::object, here);
    const std::string content = f.text_or("content", "");
    if (pattern.contains("String"))
      return std::make_unique<ReplaceString>(
          json_member(pattern, "String", nlohmann::json::value_t::string, here).get<std::string>(), content);
    if (pattern.contains("Regex"))
      return std::make_unique<ReplaceRegex>(
          json_member(pattern, "Regex", nlohmann::json::value_t::string, here).get<std::string>(), content,
          here);
    fail("{}: \"pattern\" is {}; expected {{\"String\": ...}} or {{\"Regex\": ...}}", here, pattern.dump());
  }
  if (type == "Sequence") {
    return std::make_unique<Sequence>(sequence_steps<Normalizer>(
        spec, "normalizers", here,
        [&](const nlohmann::json& step) { return make_normalizer(step, source); }));
  }
  fail(
      "{}: not implemented by Dew (normalizer types: NFC, NFD, NFKC, NFKD, Prepend, "
      "Replace, Strip, Sequence)",
      here);
}

}  // namespace dew::tokenize
