// Chat templates: from tokenizer_config.json or chat_template.jinja, rendered with the variables
// transformers gives them.
#include "tokenize/chat_template.h"

#include "dew/error.h"
#include "io/json.h"
#include "tokenize/component.h"
#include "tokenize/jinja/builtins.h"
#include "tokenize/jinja/parser.h"
#include "tokenize/jinja/render.h"
#include "tokenize/jinja/text.h"

namespace dew::tokenize {

namespace {

jinja::Value value_from_json(const nlohmann::ordered_json& json) {
  using V = nlohmann::ordered_json::value_t;
  switch (json.type()) {
    case V::null:
      return jinja::None{};
    case V::boolean:
      return json.get<bool>();
    case V::number_integer:
      return json.get<int64_t>();
    case V::number_unsigned: {
      const uint64_t value = json.get<uint64_t>();
      if (value > uint64_t(INT64_MAX)) return double(value);
      return int64_t(value);
    }
    case V::number_float:
      return json.get<double>();
    case V::string:
      return json.get<std::string>();
    case V::array: {
      jinja::ValueList items;
      for (const auto& item : json) items.push_back(value_from_json(item));
      return items;
    }
    case V::object: {
      jinja::ValueDict dict;
      for (const auto& [key, item] : json.items()) dict.set(key, value_from_json(item));
      return dict;
    }
    default:
      fail("a JSON value of an unsupported kind");
  }
}

// The special tokens map transformers passes to templates; a token the config leaves null is absent.
jinja::ValueDict special_tokens_map(const nlohmann::json& config) {
  jinja::ValueDict tokens;
  for (const char* key :
       {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"})
    if (auto token = config_token(config, key)) tokens.set(key, *token);
  if (config.contains("additional_special_tokens") && config["additional_special_tokens"].is_array()) {
    jinja::ValueList additional;
    for (const auto& token : config["additional_special_tokens"]) {
      const nlohmann::json wrapper = {{"token", token}};
      if (auto content = config_token(wrapper, "token")) additional.emplace_back(*content);
    }
    tokens.set("additional_special_tokens", std::move(additional));
  }
  return tokens;
}

// transformers' continue_final_message: the rendered text cut right after the last occurrence of the
// final message's text (its last text block, for a list of blocks), trailing white space the template
// trimmed left out.
void cut_after_final_message(ChatPrompt& prompt, const jinja::Value& messages) {
  DEW_REQUIRE(!messages.as_list().empty(),
              "[chat_template] continue_final_message: there is no message to continue");
  jinja::Value final = jinja::item_of(messages.as_list().back(), jinja::Value("content"));
  if (final.is_list()) {
    const jinja::ValueList blocks = final.as_list();
    final = jinja::Value(jinja::Undefined{"text"});
    for (auto block = blocks.rbegin(); block != blocks.rend(); ++block)
      if (block->is_dict() && block->as_dict().find("text")) {
        final = *block->as_dict().find("text");
        break;
      }
  }
  DEW_REQUIRE(final.is_string(),
              "[chat_template] continue_final_message: the final message has no text to continue");
  const std::string& text = final.as_string();
  const std::string stripped = jinja::strip_text(text, std::nullopt, true, true);
  const std::string left_stripped = jinja::strip_text(text, std::nullopt, true, false);
  const size_t at = prompt.text.rfind(stripped);
  DEW_REQUIRE(
      at != std::string::npos,
      "[chat_template] continue_final_message: the final message does not appear in the rendered chat (the "
      "template changes or drops it); check that the template and the message fit together");
  const size_t end = prompt.text.compare(at, left_stripped.size(), text) == 0 ? at + left_stripped.size()
                                                                              : at + stripped.size();
  prompt.text.resize(end);
  for (auto& [begin, span_end] : prompt.assistant_spans)
    span_end = std::min(span_end, end), begin = std::min(begin, end);
}

}  // namespace

ChatTemplates::ChatTemplates(const nlohmann::json& config, const std::string& source)
    : source_(source + " (tokenizer_config.json)"), special_tokens_(special_tokens_map(config)) {
  if (!config.contains("chat_template") || config["chat_template"].is_null()) return;
  const nlohmann::json& spec = config["chat_template"];
  if (spec.is_string()) {
    templates_.emplace_back("default", spec.get<std::string>());
    return;
  }
  DEW_REQUIRE(spec.is_array(),
              "{}: chat_template is {}; expected a string or a list of {{\"name\", \"template\"}}", source_,
              json_type_name(spec.type()));
  for (const auto& entry : spec) {
    DEW_REQUIRE(entry.is_object() && entry.contains("name") && entry["name"].is_string() &&
                    entry.contains("template") && entry["template"].is_string(),
                "{}: chat_template lists {}; expected {{\"name\": ..., \"template\": ...}}", source_,
                entry.dump());
    templates_.emplace_back(entry["name"].get<std::string>(), entry["template"].get<std::string>());
  }
}

void ChatTemplates::replace_with_file(std::string source_text, const std::string& file) {
  if (const size_t bad = invalid_utf8_at(source_text); bad != std::string::npos)
    fail("[chat_template] {}: byte {} is not valid UTF-8; expected a UTF-8 template", file, bad);
  templates_.assign(1, {"default", std::move(source_text)});
  source_ = file;
}

const std::pair<std::string, std::string>& ChatTemplates::choose(const std::string& name) const {
  DEW_REQUIRE(
      !templates_.empty(),
      "[chat_template] {}: the tokenizer has no chat template (tokenizer_config.json's chat_template or "
      "chat_template.jinja); use a plain prompt, or a tokenizer of an instruction-tuned model",
      source_);
  const std::string wanted = name.empty() ? "default" : name;
  if (name.empty() && templates_.size() == 1) return templates_.front();
  std::vector<std::string> names;
  for (const auto& entry : templates_) {
    if (entry.first == wanted) return entry;
    names.push_back(entry.first);
  }
  fail("[chat_template] {}: no chat template named '{}'; it has {}", source_, wanted, fmt::join(names, ", "));
}

ChatPrompt ChatTemplates::render(std::string_view messages_json, const ChatOptions& options) const {
  DEW_REQUIRE(
      !(options.add_generation_prompt && options.continue_final_message),
      "[chat_template] add_generation_prompt opens a new assistant turn and continue_final_message continues "
      "the last message; ask for one of them");
  const auto& [name, template_text] = choose(options.template_name);
  const std::string where = source_ + (templates_.size() > 1 ? " (template '" + name + "')" : "");
  const jinja::Value messages =
      value_from_json(parse_ordered_json(messages_json, "[chat_template] messages"));
  DEW_REQUIRE(messages.is_list(), "[chat_template] messages: a {}; expected a JSON array of message objects",
              messages.type_name());
  for (const jinja::Value& message : messages.as_list())
    DEW_REQUIRE(message.is_dict(),
                "[chat_template] messages: holds a {}; expected objects like "
                "{{\"role\": \"user\", \"content\": \"...\"}}",
                message.type_name());

  // transformers: render(messages=, tools=, documents=, add_generation_prompt=, **special_tokens_map,
  // **kwargs); tools and documents are None (defined) when not given.
  jinja::ValueDict variables = special_tokens_;
  if (!options.variables_json.empty()) {
    const jinja::Value extra =
        value_from_json(parse_ordered_json(options.variables_json, "[chat_template] variables"));
    DEW_REQUIRE(extra.is_dict(), "[chat_template] variables: a {}; expected a JSON object of name: value",
                extra.type_name());
    for (const auto& [key, value] : extra.as_dict().entries) variables.set(key, value);
  }
  variables.set("messages", messages);
  variables.set("tools", jinja::None{});
  if (!options.tools_json.empty()) {
    jinja::Value tools = value_from_json(parse_ordered_json(options.tools_json, "[chat_template] tools"));
    DEW_REQUIRE(tools.is_list(), "[chat_template] tools: a {}; expected a JSON array of tool schemas",
                tools.type_name());
    variables.set("tools", std::move(tools));
  }
  if (!variables.find("documents")) variables.set("documents", jinja::None{});
  variables.set("add_generation_prompt", options.add_generation_prompt);

  const jinja::Template parsed = jinja::parse_template(template_text, where);
  jinja::RenderResult rendered = jinja::render_template(parsed, variables);
  ChatPrompt prompt{std::move(rendered.text), std::move(rendered.generation_spans)};
  if (options.continue_final_message) cut_after_final_message(prompt, messages);
  return prompt;
}

}  // namespace dew::tokenize
