// The chat stage (SFT): conversations rendered by the chat template, the loss on the assistant's
// turns only — found by the template's {% generation %} marks or by rendering prefixes — through pack,
// batch, the cache and next_token_targets; conversations it cannot split are refused by name.
#include <dew/data.h>
#include <dew/train.h>
#include <gtest/gtest.h>

#include "data_files.h"
#include "error_of.h"

namespace dew::data {
namespace {

// ChatML, as Qwen and many others write it.
constexpr const char* kChatMl =
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
// The same, marking the assistant's turns for transformers' return_assistant_tokens_mask; the newline
// after <|im_end|> is left outside.
constexpr const char* kMarked =
    "{% for m in messages %}{% if m.role == 'assistant' %}<|im_start|>assistant\n{% generation %}"
    "{{ m.content }}<|im_end|>{% endgeneration %}\n{% else %}<|im_start|>{{ m.role }}\n{{ m.content }}"
    "<|im_end|>\n{% endif %}{% endfor %}";

constexpr const char* kConversations =
    R"({"messages": [{"role": "user", "content": "where is the river"}, {"role": "assistant", "content": "by the old hill"}, {"role": "user", "content": "and the stone"}, {"role": "assistant", "content": "under the river"}]})"
    "\n"
    R"({"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "a hill"}, {"role": "assistant", "content": "a stone"}]})"
    "\n";

class ChatStage : public ::testing::Test {
 protected:
  ChatStage() : dir_("chat") {
    dir_.write("chats.jsonl", kConversations);
    const std::string text = "where is the river by the old hill and the stone under a hill stone be brief";
    dir_.write(
        "tok/tokenizer.json",
        train_byte_level_bpe({text}, {.vocab_size = 300, .special_tokens = {"<|im_start|>", "<|im_end|>"}}));
    dir_.write("tok/tokenizer_config.json", R"({"eos_token": "<|im_end|>"})");
    dir_.write("tok/chat_template.jinja", kChatMl);
    dir_.write("marked/tokenizer.json", dir_.read("tok/tokenizer.json"));
    dir_.write("marked/tokenizer_config.json", R"({"eos_token": "<|im_end|>"})");
    dir_.write("marked/chat_template.jinja", kMarked);
  }
  Chain chats(const std::string& tokenizer) {
    Chain c = Chain::jsonl({dir_.path("chats.jsonl")}, "messages");
    c.chat(dir_.path(tokenizer));
    return c;
  }
  // The text of a record's tokens whose loss_mask is `counts`, in order.
  std::string text_where(const Record& r, uint8_t counts, const Tokenizer& tokenizer) {
    std::vector<int64_t> ids;
    for (size_t i = 0; i < r.tokens.size(); ++i)
      if (r.loss_mask[i] == counts) ids.push_back(r.tokens[i]);
    return tokenizer.decode(ids);
  }
  testing::DataDir dir_;
};

TEST_F(ChatStage, PrefixRenderingsMarkEveryAssistantTurn) {
  Chain c = chats("tok");
  const Tokenizer& tokenizer = *c.tokenizer();
  std::optional<Record> first = c.next_record();
  ASSERT_TRUE(first);
  ASSERT_EQ(first->loss_mask.size(), first->tokens.size());
  EXPECT_EQ(text_where(*first, 1, tokenizer), "by the old hill<|im_end|>\nunder the river<|im_end|>\n");
  EXPECT_EQ(
      tokenizer.decode({first->tokens.begin(), first->tokens.end()}),
      "<|im_start|>user\nwhere is the river<|im_end|>\n<|im_start|>assistant\nby the old hill<|im_end|>\n"
      "<|im_start|>user\nand the stone<|im_end|>\n<|im_start|>assistant\nunder the river<|im_end|>\n");
  std::optional<Record> second = c.next_record();
  ASSERT_TRUE(second);
  EXPECT_EQ(text_where(*second, 1, tokenizer), "a stone<|im_end|>\n");
  EXPECT_EQ(
      text_where(*second, 0, tokenizer),
      "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\na hill<|im_end|>\n<|im_start|>assistant\n");
}

TEST_F(ChatStage, GenerationMarksDecideWhenTheTemplateHasThem) {
  Chain c = chats("marked");
  std::optional<Record> first = c.next_record();
  ASSERT_TRUE(first);
  EXPECT_EQ(text_where(*first, 1, *c.tokenizer()), "by the old hill<|im_end|>under the river<|im_end|>");
}

TEST_F(ChatStage, OnlyAssistantTokensAreTargetsAfterPackAndBatchAndTheCache) {
  const auto targets_text = [&](bool cache) {
    Chain c = chats("tok");
    c.pack_first_fit(128).batch(2).cache({.enabled = cache, .dir = dir_.path("cache")});
    const Batch batch = *c.next_batch();
    const Tensor targets = train::next_token_targets(batch);
    std::vector<int64_t> kept;
    for (int64_t i = 0; i < targets.numel(); ++i)
      if (targets.data<int64_t>()[i] != train::kIgnoreTarget) kept.push_back(targets.data<int64_t>()[i]);
    return c.tokenizer()->decode(kept);
  };
  // First-fit places the longer conversation first.
  const std::string want = "by the old hill<|im_end|>\nunder the river<|im_end|>\na stone<|im_end|>\n";
  EXPECT_EQ(targets_text(false), want);
  EXPECT_EQ(targets_text(true), want) << "building the cache";
  EXPECT_EQ(targets_text(true), want) << "reading the cache";
}

TEST_F(ChatStage, RefusesWhatItCannotSplitAndTemplatesItLacks) {
  // A template that renders the last message differently: prefixes cannot find the first turn.
  dir_.write("tok/chat_template.jinja",
             "{% for m in messages %}{% if loop.last %}[last]{% endif %}{{ m.role }}: {{ m.content }}\n{% "
             "endfor %}");
  std::string e = testing::error_of([&] { chats("tok").next_record(); });
  EXPECT_NE(e.find("renders message 1 differently in a shorter conversation"), std::string::npos) << e;
  EXPECT_NE(e.find("chats.jsonl:1"), std::string::npos) << e;

  dir_.write("plain/tokenizer.json", dir_.read("tok/tokenizer.json"));
  e = testing::error_of([&] { chats("plain"); });
  EXPECT_NE(e.find("has no chat template"), std::string::npos) << e;

  dir_.write("chats.jsonl", R"({"messages": [{"role": "user", "content": "a hill"}]})"
                            "\n");
  dir_.write("tok/chat_template.jinja", kChatMl);
  e = testing::error_of([&] { chats("tok").next_record(); });
  EXPECT_NE(e.find("has no assistant turn"), std::string::npos) << e;
}

}  // namespace
}  // namespace dew::data
