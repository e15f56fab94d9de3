// libFuzzer target for dew serve's request parser: the first byte picks the endpoint, the rest is a
// request body as the HTTP server reads it (JSON, then parse_request over a byte-level tokenizer with a
// chat template). Either the body is refused — not JSON, an ApiError with status 400 and a message, or
// the tokenizer's dew::Error — or it becomes a request within the API's bounds. Any other exception, a
// crash, an out-of-bounds access or undefined behaviour is a bug.
#include <dew/error.h>
#include <dew/tokenizer.h>

#include <nlohmann/json.hpp>
#include <string>

#include "serve/openai_api.h"
#include "tokenize/byte_level.h"

namespace {

using nlohmann::json;

// Every byte a token (GPT-2's alphabet), so any text encodes; an end token; a ChatML-style template.
const dew::Tokenizer& tokenizer() {
  static const dew::Tokenizer t = [] {
    json vocab = json::object();
    for (int b = 0; b < 256; ++b) vocab[dew::tokenize::byte_level_alphabet().text_of_byte[size_t(b)]] = b;
    const json model = {
        {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}},
        {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}},
        {"decoder", {{"type", "ByteLevel"}}},
        {"added_tokens", {{{"id", 256}, {"content", "<|end|>"}, {"special", true}}}}};
    const json config = {{"eos_token", "<|end|>"},
                         {"chat_template",
                          "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
                          "{% if add_generation_prompt %}<|assistant|>{% endif %}"}};
    return dew::Tokenizer::from_json(model.dump(), config.dump(), "fuzz");
  }();
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto endpoint = data[0] % 2 ? dew::serve::Endpoint::chat : dew::serve::Endpoint::completions;
  const json body = json::parse(reinterpret_cast<const char*>(data) + 1,
                                reinterpret_cast<const char*>(data) + size, nullptr, false);
  if (body.is_discarded()) return 0;  // the server's 400 for a body that is not JSON
  dew::serve::ApiContext context;
  context.tokenizer = &tokenizer();
  context.model_name = "m";
  context.context = 64;
  context.max_request_tokens = 48;
  try {
    const dew::serve::ApiRequest r = dew::serve::parse_request(endpoint, body, context);
    const auto& o = r.text.options;
    const auto& s = o.sampling;
    if (r.text.prompt.empty() || o.max_tokens < 1 || o.n < 1 || o.n > 128 || o.logprobs < -1 ||
        o.logprobs > 20 || !(s.temperature >= 0 && s.temperature <= 2) || !(s.top_p > 0 && s.top_p <= 1) ||
        s.top_k < 0 || !(s.min_p >= 0 && s.min_p <= 1) || r.text.stop.size() > 4)
      __builtin_trap();
  } catch (const dew::serve::ApiError& e) {
    if (e.status != 400 || e.message.empty()) __builtin_trap();
  } catch (const dew::Error&) {  // the tokenizer's refusals, which the server answers with 400
  }
  return 0;
}
