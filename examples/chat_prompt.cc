// Turns a conversation into a model's prompt with the chat template of its tokenizer (what
// transformers' apply_chat_template does), then into ids. Without an argument it writes a small
// tokenizer whose template is ChatML-style, with {% generation %} marking the assistant's turns.
// Usage: chat_prompt [TOKENIZER_DIR]
#include <dew/tokenizer.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <fstream>

int main(int argc, char** argv) {
  std::string dir;
  if (argc > 1) {
    dir = argv[1];
  } else {
    dew::BpeTrainOptions options;
    options.vocab_size = 300;
    options.special_tokens = {"<|im_start|>", "<|im_end|>"};
    dir = (std::filesystem::temp_directory_path() / "dew_chat_prompt_example").string();
    std::filesystem::create_directories(dir);
    std::ofstream(std::filesystem::path(dir) / "tokenizer.json")
        << dew::train_byte_level_bpe({"You are a helpful assistant. Hello there!"}, options);
    std::ofstream(std::filesystem::path(dir) / "tokenizer_config.json") << R"({"eos_token": "<|im_end|>"})";
    std::ofstream(std::filesystem::path(dir) / "chat_template.jinja") << R"(
{%- for message in messages %}
    {{- '<|im_start|>' + message.role + '\n' }}
    {%- if message.role == 'assistant' %}
        {%- generation %}{{ message.content | trim }}<|im_end|>{% endgeneration %}
    {%- else %}
        {{- message.content | trim + '<|im_end|>' }}
    {%- endif %}
    {{- '\n' }}
{%- endfor %}
{%- if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}
)";
  }
  const dew::Tokenizer tokenizer = dew::Tokenizer::load(dir);
  if (!tokenizer.has_chat_template()) {
    fmt::print(stderr, "{} has no chat template\n", dir);
    return 1;
  }
  const std::string conversation = R"([
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Hello there!"},
    {"role": "assistant", "content": "Hi! How can I help?"},
    {"role": "user", "content": "Say it again."}])";

  dew::ChatOptions options;
  options.add_generation_prompt = true;  // the prompt ends where the assistant's next turn begins
  const dew::ChatPrompt prompt = tokenizer.apply_chat_template(conversation, options);
  fmt::print("{}\n", prompt.text);
  for (auto [begin, end] : prompt.assistant_spans)
    fmt::print("assistant span [{}, {}): {:?}\n", begin, end, prompt.text.substr(begin, end - begin));

  // The template wrote the special tokens, so the text is encoded without adding any.
  const std::vector<int64_t> ids = tokenizer.encode(prompt.text);
  fmt::print("{} ids: {}\n", ids.size(), ids);
  return tokenizer.decode(ids) == prompt.text ? 0 : 1;
}
