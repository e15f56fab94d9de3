// The OpenAI API subset dew serve speaks: requests of /v1/completions and /v1/chat/completions read
// from JSON into engine requests (every field's type and range checked, unsupported fields refused by
// name), and the answers written back — whole, or as server-sent-event chunks. No sockets here.
#pragma once

#include <dew/tokenizer.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serve/engine_loop.h"

namespace dew::serve {

enum class Endpoint { completions, chat };

// A request the API cannot take: HTTP status, message, and the field at fault (empty: none).
struct ApiError {
  int status = 400;
  std::string message, param, type = "invalid_request_error";
  nlohmann::json body() const;  // {"error": {...}} as OpenAI writes it
};

struct ApiRequest {
  Endpoint endpoint = Endpoint::completions;
  TextRequest text;
  bool stream = false, include_usage = false;
  bool chat_logprobs = false;  // chat: logprobs true (text.options.logprobs holds top_logprobs)
};

struct ApiContext {
  const Tokenizer* tokenizer = nullptr;
  std::string model_name;
  int64_t context = 0;             // the model's positions (0: unbounded)
  int64_t max_request_tokens = 0;  // prompt + max_tokens the KV pool can hold for one sequence
  SamplingOptions defaults;        // generation_config.json's
};

// Reads a request body; throws ApiError.
ApiRequest parse_request(Endpoint endpoint, const nlohmann::json& body, const ApiContext& context);

// Collects the events of one request into the whole answer (non-streaming).
class AnswerBuilder {
 public:
  AnswerBuilder(const ApiRequest& request, const ApiContext& context, std::string id, int64_t created);
  void add(const StreamEvent& event);
  nlohmann::json answer() const;
  // One streamed chunk for an event (null when the event carries nothing to send).
  nlohmann::json chunk(const StreamEvent& event);
  nlohmann::json usage_chunk() const;  // stream_options.include_usage: the last chunk

 private:
  // Takes an event into its choice; the token's log-probabilities entry (null when none are asked).
  nlohmann::json record(const StreamEvent& event);
  nlohmann::json usage() const;
  nlohmann::json choice_logprobs(const StreamEvent& event) const;
  nlohmann::json envelope(const char* object) const;
  const ApiRequest& request_;
  const ApiContext& context_;
  std::string id_;
  int64_t created_;
  struct Choice {
    std::string text;
    nlohmann::json logprobs;
    std::string finish_reason;
    bool role_sent = false;
  };
  std::vector<Choice> choices_;
  int64_t completion_tokens_ = 0;
};

}  // namespace dew::serve
