// A tokenizer's chat templates: where they come from (tokenizer_config.json's chat_template, a string
// or a list of named ones; chat_template.jinja beside it) and what the template sees when it renders
// (transformers' render_jinja_template: messages, tools, documents, add_generation_prompt, the
// special tokens map, and the caller's further variables).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dew/tokenizer.h"
#include "tokenize/jinja/value.h"

namespace dew::tokenize {

class ChatTemplates {
 public:
  ChatTemplates() = default;
  // `config` is tokenizer_config.json (an empty object when there is none); `source` names the
  // tokenizer in errors.
  ChatTemplates(const nlohmann::json& config, const std::string& source);

  // chat_template.jinja: it replaces whatever tokenizer_config.json held.
  void replace_with_file(std::string source_text, const std::string& file);

  bool empty() const { return templates_.empty(); }
  ChatPrompt render(std::string_view messages_json, const ChatOptions& options) const;

 private:
  const std::pair<std::string, std::string>& choose(const std::string& name) const;

  std::vector<std::pair<std::string, std::string>> templates_;  // name → Jinja source
  std::string source_;                                          // the file they came from
  jinja::ValueDict special_tokens_;  // bos_token, eos_token, ..., additional_special_tokens
};

}  // namespace dew::tokenize
