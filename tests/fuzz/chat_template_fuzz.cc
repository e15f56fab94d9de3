// libFuzzer target for the chat-template engine under its sandbox (src/tokenize/jinja/limits.h): the
// input is a template, rendered over a fixed conversation. Either it renders, or a dew::Error names
// the fault and the line; it never runs past its bounds of time and memory (libFuzzer's -timeout and
// -rss_limit_mb catch those), crashes, or reads out of bounds.
#include <dew/error.h>
#include <dew/tokenizer.h>

#include <nlohmann/json.hpp>
#include <string>

namespace {

// A byte-level vocabulary of a few tokens, enough to carry special tokens into the template.
const char* kTokenizer = R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": []},
  "added_tokens": [{"id": 2, "content": "<s>", "special": true}, {"id": 3, "content": "</s>", "special": true}]})";
const char* kMessages = R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
  {"role": "assistant", "content": "Hello", "reasoning_content": "greet"}, {"role": "user", "content": "Bye"}])";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  try {
    const nlohmann::json config = {{"bos_token", "<s>"}, {"eos_token", "</s>"}, {"chat_template", source}};
    // Bytes that are not UTF-8 reach the template as U+FFFD, as a file read by Python would give them.
    const std::string config_json = config.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    const dew::Tokenizer tokenizer = dew::Tokenizer::from_json(kTokenizer, config_json, "fuzz");
    (void)tokenizer.apply_chat_template(kMessages, {.add_generation_prompt = true});
    return 0;
  } catch (const dew::Error&) {
    return 0;
  }
}
