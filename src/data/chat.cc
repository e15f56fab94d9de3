// chat: supervised fine-tuning records. A record's text is a conversation — a JSON array of messages
// ({"role", "content", ...}) or an object holding one under "messages" — rendered by the tokenizer's
// chat template and encoded, with loss_mask 1 on the assistant's turns only. The assistant's spans are
// the template's {% generation %} marks when it has them; otherwise each assistant turn is the text
// between the conversation before it rendered with the generation prompt and the conversation through
// it (transformers' prefix method), which must both be prefixes of the whole rendering.
#include <dew/error.h>

#include "data/stage.h"
#include "io/json.h"

namespace dew::data::detail {
namespace {

using Spans = std::vector<std::pair<size_t, size_t>>;

class Chat : public Stage {
 public:
  Chat(std::unique_ptr<Stage> upstream, const std::string& path, const ChatStageOptions& options)
      : Stage(std::move(upstream)),
        tokenizer_(Tokenizer::load(path)),
        path_(path),
        hash_(tokenizer_content_hash(path)),
        options_(options) {
    DEW_REQUIRE(
        tokenizer_.has_chat_template(),
        "[data] chat: {} has no chat template; expected a chat_template in tokenizer_config.json or a "
        "chat_template.jinja beside tokenizer.json",
        path);
  }
  Json describe() const override {
    return {{"stage", "chat"},
            {"tokenizer", {{"path", path_}, {"xxh3", hash_}}},
            {"template", options_.template_name}};
  }
  std::string summary() const override {
    return fmt::format("chat: conversations through {}'s chat template (content {}), loss on assistant turns",
                       path_, hash_);
  }
  bool per_record() const override { return true; }
  bool cacheable() const override { return true; }
  const Tokenizer* tokenizer() const override { return &tokenizer_; }

 protected:
  std::optional<Record> next() override {
    std::optional<Record> r = upstream_->pull();
    if (!r) return r;
    const nlohmann::json parsed = parse_json(r->text, r->origin);
    const nlohmann::json& messages =
        parsed.is_object() && parsed.contains("messages") ? parsed["messages"] : parsed;
    DEW_REQUIRE(messages.is_array() && !messages.empty(),
                "[data] chat: {} holds {}; expected a non-empty JSON array of messages or an object with "
                "\"messages\"",
                r->origin, json_type_name(parsed.type()));
    const ChatPrompt whole = render(messages, false);
    const Spans spans =
        whole.assistant_spans.empty() ? prefix_spans(messages, whole.text, r->origin) : whole.assistant_spans;
    DEW_REQUIRE(!spans.empty(), "[data] chat: {} has no assistant turn; nothing in it would be trained on",
                r->origin);
    // Encoded piece by piece at the spans' edges, so that each token is wholly inside or outside a turn.
    r->tokens.clear();
    r->loss_mask.clear();
    size_t at = 0;
    const auto encode = [&](size_t end, uint8_t counts) {
      if (end <= at) return;
      for (int64_t id : tokenizer_.encode(std::string_view(whole.text).substr(at, end - at))) {
        r->tokens.push_back(int32_t(id));
        r->loss_mask.push_back(counts);
      }
      at = end;
    };
    for (const auto& [begin, end] : spans) {
      encode(begin, 0);
      encode(end, 1);
    }
    encode(whole.text.size(), 0);
    r->text.clear();
    return r;
  }

 private:
  ChatPrompt render(const nlohmann::json& messages, bool generation_prompt) const {
    return tokenizer_.apply_chat_template(messages.dump(), {.add_generation_prompt = generation_prompt,
                                                            .template_name = options_.template_name});
  }
  Spans prefix_spans(const nlohmann::json& messages, const std::string& whole,
                     const std::string& origin) const {
    Spans spans;
    for (size_t i = 0; i < messages.size(); ++i) {
      if (messages[i].value("role", std::string()) != "assistant") continue;
      const nlohmann::json before(messages.begin(), messages.begin() + long(i));
      const nlohmann::json through(messages.begin(), messages.begin() + long(i) + 1);
      const std::string prompt = i == 0 ? std::string() : render(before, true).text;
      const std::string turn = render(through, false).text;
      DEW_REQUIRE(
          turn.starts_with(prompt) && whole.starts_with(turn),
          "[data] chat: {}: the template renders message {} differently in a shorter conversation, so "
          "its assistant turn cannot be found by prefixes; mark it with {{% generation %}} ... "
          "{{% endgeneration %}} in the template",
          origin, i);
      if (turn.size() > prompt.size()) spans.emplace_back(prompt.size(), turn.size());
    }
    return spans;
  }
  Tokenizer tokenizer_;
  std::string path_, hash_;
  ChatStageOptions options_;
};

}  // namespace

std::unique_ptr<Stage> make_chat(std::unique_ptr<Stage> upstream, const std::string& tokenizer_path,
                                 const ChatStageOptions& options) {
  return std::make_unique<Chat>(std::move(upstream), tokenizer_path, options);
}

}  // namespace dew::data::detail
