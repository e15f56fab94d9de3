// parse_request and AnswerBuilder: the OpenAI fields dew serve takes, their checks, and the answers'
// shapes (text_completion, chat.completion and their chunks, usage, logprobs in each endpoint's form).
#include "serve/openai_api.h"

#include <fmt/format.h>

#include <cmath>

namespace dew::serve {
namespace {

using nlohmann::json;

[[noreturn]] void refuse(const std::string& param, const std::string& message) {
  throw ApiError{400, message, param};
}

// A field that must be a number in [low, high] when present.
std::optional<double> number(const json& body, const char* key, double low, double high) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) refuse(key, fmt::format("'{}' is {}; expected a number", key, it->type_name()));
  const double v = it->get<double>();
  if (!(v >= low && v <= high)) refuse(key, fmt::format("'{}' is {}; expected {} to {}", key, v, low, high));
  return v;
}

std::optional<int64_t> integer(const json& body, const char* key, int64_t low, int64_t high) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) refuse(key, fmt::format("'{}' is {}; expected an integer", key, it->dump()));
  const int64_t v = it->get<int64_t>();
  if (v < low || v > high) refuse(key, fmt::format("'{}' is {}; expected {} to {}", key, v, low, high));
  return v;
}

bool flag(const json& body, const char* key) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return false;
  if (!it->is_boolean()) refuse(key, fmt::format("'{}' is {}; expected true or false", key, it->type_name()));
  return it->get<bool>();
}

// Fields OpenAI defines that change the answer and dew serve does not do: refused by name, never ignored.
void refuse_unsupported(const json& body) {
  for (const char* key : {"suffix", "logit_bias", "tools", "tool_choice", "functions", "function_call",
                          "response_format", "audio", "modalities", "prediction"}) {
    const auto it = body.find(key);
    if (it != body.end() && !it->is_null() && !(it->is_object() && it->empty()) &&
        !(std::string(key) == "response_format" && it->is_object() && it->value("type", "") == "text"))
      refuse(key, fmt::format("'{}' is not supported by dew serve", key));
  }
  if (flag(body, "echo")) refuse("echo", "'echo' is not supported by dew serve");
}

bool all_integers(const json& array) {
  return std::all_of(array.begin(), array.end(), [](const json& x) { return x.is_number_integer(); });
}

std::vector<int64_t> prompt_tokens(const json& body, const ApiContext& c) {
  const auto it = body.find("prompt");
  if (it == body.end()) refuse("prompt", "'prompt' is missing; expected a string or an array of token ids");
  if (it->is_string()) return c.tokenizer->encode(it->get<std::string>(), {.add_special_tokens = true});
  if (it->is_array() && !it->empty() && all_integers(*it)) return it->get<std::vector<int64_t>>();
  refuse("prompt", "'prompt' must be one string or one array of token ids (one prompt per request)");
}

std::vector<int64_t> chat_tokens(const json& body, const ApiContext& c) {
  const auto it = body.find("messages");
  if (it == body.end() || !it->is_array() || it->empty())
    refuse("messages", "'messages' must be a non-empty array of {role, content} objects");
  for (const json& m : *it)
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
      refuse("messages", "each message must be an object with a string 'role'");
  if (!c.tokenizer->has_chat_template())
    refuse("messages", "this model's tokenizer has no chat template; use /v1/completions");
  ChatOptions options;
  options.add_generation_prompt = true;
  if (const auto kw = body.find("chat_template_kwargs"); kw != body.end() && kw->is_object())
    options.variables_json = kw->dump();
  try {
    return c.tokenizer->encode(c.tokenizer->apply_chat_template(it->dump(), options).text);
  } catch (const Error& e) {
    refuse("messages", e.what());
  }
}

std::vector<std::string> stop_strings(const json& body) {
  const auto it = body.find("stop");
  if (it == body.end() || it->is_null()) return {};
  if (it->is_string()) return {it->get<std::string>()};
  if (it->is_array() && it->size() <= 4 && std::all_of(it->begin(), it->end(), [](const json& x) {
        return x.is_string() && !x.get<std::string>().empty();
      }))
    return it->get<std::vector<std::string>>();
  refuse("stop", "'stop' must be a string or an array of up to 4 non-empty strings");
}

json bytes_of(const std::string& s) {
  json b = json::array();
  for (unsigned char ch : s) b.push_back(int(ch));
  return b;
}

}  // namespace

// Here, beside the answers that write them, so that the request parser builds without the engine (its
// fuzz target, tests/fuzz/openai_request_fuzz.cc).
const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::stop:
      return "stop";
    case FinishReason::length:
      return "length";
    case FinishReason::cancelled:
      return "cancelled";
  }
  return "?";
}

json ApiError::body() const {
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", param.empty() ? json(nullptr) : json(param)},
            {"code", nullptr}}}};
}

ApiRequest parse_request(Endpoint endpoint, const json& body, const ApiContext& c) {
  if (!body.is_object()) refuse("", "the request body must be a JSON object");
  ApiRequest r;
  r.endpoint = endpoint;
  const auto model = body.find("model");
  if (model == body.end() || !model->is_string()) refuse("model", "'model' is missing; expected a string");
  if (model->get<std::string>() != c.model_name)
    refuse("model", fmt::format("the model '{}' does not exist here; this server serves '{}'",
                                model->get<std::string>(), c.model_name));
  refuse_unsupported(body);
  r.text.prompt = endpoint == Endpoint::chat ? chat_tokens(body, c) : prompt_tokens(body, c);
  if (r.text.prompt.empty()) refuse("prompt", "the prompt encodes to no tokens; expected some text");
  const int64_t prompt = int64_t(r.text.prompt.size());
  // The tokens left for the answer, for max_tokens' default; the engine refuses a request past them.
  const int64_t room = std::max<int64_t>(
      1, std::min(c.context > 0 ? c.context : c.max_request_tokens, c.max_request_tokens) - prompt);
  RequestOptions& o = r.text.options;
  const auto max_tokens = endpoint == Endpoint::chat && body.contains("max_completion_tokens")
                              ? integer(body, "max_completion_tokens", 1, int64_t(1) << 30)
                              : integer(body, "max_tokens", 1, int64_t(1) << 30);
  o.max_tokens = max_tokens.value_or(endpoint == Endpoint::chat ? room : std::min<int64_t>(16, room));
  SamplingOptions& s = o.sampling;
  s = c.defaults;
  s.temperature = number(body, "temperature", 0, 2).value_or(s.temperature);
  s.top_p = number(body, "top_p", 1e-9, 1).value_or(s.top_p);
  s.top_k = integer(body, "top_k", -1, int64_t(1) << 30).value_or(s.top_k);
  if (s.top_k < 0) s.top_k = 0;  // vLLM's -1: off
  s.min_p = number(body, "min_p", 0, 1).value_or(s.min_p);
  s.presence_penalty = number(body, "presence_penalty", -2, 2).value_or(0);
  s.frequency_penalty = number(body, "frequency_penalty", -2, 2).value_or(0);
  s.repetition_penalty = number(body, "repetition_penalty", 1e-9, 1e9).value_or(s.repetition_penalty);
  if (const auto seed =
          integer(body, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max())) {
    s.seed = uint64_t(*seed);
    o.has_seed = true;
  }
  o.n = integer(body, "n", 1, 128).value_or(1);
  if (const auto best_of = integer(body, "best_of", 1, 128); best_of && *best_of != o.n)
    refuse("best_of", "'best_of' other than n is not supported by dew serve");
  o.ignore_eos = flag(body, "ignore_eos");
  if (const auto it = body.find("stop_token_ids"); it != body.end() && !it->is_null()) {
    if (!it->is_array() || !all_integers(*it))
      refuse("stop_token_ids", "'stop_token_ids' must be an array of token ids");
    o.stop_token_ids = it->get<std::vector<int64_t>>();
  }
  r.text.stop = stop_strings(body);
  if (endpoint == Endpoint::chat) {
    r.chat_logprobs = flag(body, "logprobs");
    const auto top = integer(body, "top_logprobs", 0, 20);
    if (top && !r.chat_logprobs) refuse("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    o.logprobs = r.chat_logprobs ? top.value_or(0) : -1;
  } else {
    o.logprobs = integer(body, "logprobs", 0, 20).value_or(-1);
  }
  r.stream = flag(body, "stream");
  if (const auto so = body.find("stream_options"); so != body.end() && !so->is_null()) {
    if (!so->is_object()) refuse("stream_options", "'stream_options' must be an object");
    r.include_usage = flag(*so, "include_usage");
  }
  return r;
}

AnswerBuilder::AnswerBuilder(const ApiRequest& request, const ApiContext& context, std::string id,
                             int64_t created)
    : request_(request),
      context_(context),
      id_(std::move(id)),
      created_(created),
      choices_(size_t(request.text.options.n)) {
  for (Choice& c : choices_)
    c.logprobs = request.endpoint == Endpoint::chat ? json{{"content", json::array()}}
                                                    : json{{"tokens", json::array()},
                                                           {"token_logprobs", json::array()},
                                                           {"top_logprobs", json::array()},
                                                           {"text_offset", json::array()}};
}

json AnswerBuilder::choice_logprobs(const StreamEvent& e) const {
  const Tokenizer& t = *context_.tokenizer;
  const std::string token = t.decode({e.token.token});
  if (request_.endpoint == Endpoint::chat) {
    json top = json::array();
    for (const TokenLogprob& p : e.token.top) {
      const std::string s = t.decode({p.token});
      top.push_back({{"token", s}, {"logprob", p.logprob}, {"bytes", bytes_of(s)}});
    }
    return {{"token", token},
            {"logprob", e.token.chosen.logprob},
            {"bytes", bytes_of(token)},
            {"top_logprobs", top}};
  }
  json top = json::object();
  for (const TokenLogprob& p : e.token.top) top[t.decode({p.token})] = p.logprob;
  return {{"token", token}, {"logprob", e.token.chosen.logprob}, {"top", top}};
}

void AnswerBuilder::add(const StreamEvent& e) {
  record(e);
}

json AnswerBuilder::record(const StreamEvent& e) {
  Choice& c = choices_[size_t(e.choice)];
  json lp = nullptr;
  if (!e.finished) {
    ++completion_tokens_;
    if (request_.text.options.logprobs >= 0) {
      lp = choice_logprobs(e);
      if (request_.endpoint == Endpoint::chat) {
        c.logprobs["content"].push_back(lp);
      } else {
        c.logprobs["tokens"].push_back(lp["token"]);
        c.logprobs["token_logprobs"].push_back(lp["logprob"]);
        c.logprobs["top_logprobs"].push_back(lp["top"]);
        c.logprobs["text_offset"].push_back(c.text.size());
      }
    }
  } else {
    c.finish_reason = finish_reason_name(e.reason);
  }
  c.text += e.text;
  return lp;
}

json AnswerBuilder::usage() const {
  const int64_t prompt = int64_t(request_.text.prompt.size());
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion_tokens_},
          {"total_tokens", prompt + completion_tokens_}};
}

json AnswerBuilder::envelope(const char* object) const {
  return {{"id", id_}, {"object", object}, {"created", created_}, {"model", context_.model_name}};
}

json AnswerBuilder::answer() const {
  const bool chat = request_.endpoint == Endpoint::chat;
  json a = envelope(chat ? "chat.completion" : "text_completion");
  json choices = json::array();
  for (size_t i = 0; i < choices_.size(); ++i) {
    const Choice& c = choices_[i];
    const bool with_logprobs = request_.text.options.logprobs >= 0;
    json choice = {{"index", i},
                   {"finish_reason", c.finish_reason},
                   {"logprobs", with_logprobs ? c.logprobs : json(nullptr)}};
    if (chat)
      choice["message"] = {{"role", "assistant"}, {"content", c.text}};
    else
      choice["text"] = c.text;
    choices.push_back(choice);
  }
  a["choices"] = choices;
  a["usage"] = usage();
  return a;
}

json AnswerBuilder::chunk(const StreamEvent& e) {
  const json one = record(e);
  const bool chat = request_.endpoint == Endpoint::chat;
  Choice& c = choices_[size_t(e.choice)];
  if (!e.finished && e.text.empty() && request_.text.options.logprobs < 0 && (!chat || c.role_sent))
    return nullptr;
  json choice = {{"index", e.choice}, {"finish_reason", e.finished ? json(c.finish_reason) : json(nullptr)}};
  json lp = nullptr;
  if (!one.is_null()) {
    lp = chat ? json{{"content", json::array({one})}}
              : json{{"tokens", {one["token"]}},
                     {"token_logprobs", {one["logprob"]}},
                     {"top_logprobs", {one["top"]}}};
  }
  choice["logprobs"] = lp;
  if (chat) {
    choice["delta"] = json::object();
    if (!c.role_sent) choice["delta"]["role"] = "assistant", c.role_sent = true;
    if (!e.text.empty() || !e.finished) choice["delta"]["content"] = e.text;
  } else {
    choice["text"] = e.text;
  }
  json out = envelope(chat ? "chat.completion.chunk" : "text_completion");
  out["choices"] = json::array({choice});
  return out;
}

json AnswerBuilder::usage_chunk() const {
  json out = envelope(request_.endpoint == Endpoint::chat ? "chat.completion.chunk" : "text_completion");
  out["choices"] = json::array();
  out["usage"] = usage();
  return out;
}

}  // namespace dew::serve
