// `dew generate --model DIR --prompt TEXT [...]`: continues a prompt with the model and tokenizer of a
// Hugging Face directory, streaming the text to stdout as it is decided. Sampling defaults come from
// generation_config.json as transformers reads it (do_sample false: greedy), flags override them;
// generation stops at an EOS id, a stop string or --max-new-tokens. With --chat the prompt is a user
// message rendered by the tokenizer's chat template.
#include <dew/error.h>
#include <dew/models.h>
#include <dew/tokenizer.h>
#include <dew/train.h>

#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/inference_model.h"
#include "io/files.h"
#include "io/json.h"

namespace dew::cli {
namespace {

struct GenerateOptions {
  std::string model, prompt, dtype;
  int64_t max_new_tokens = 256;
  uint64_t seed = 0;
  std::optional<double> temperature, top_p, min_p, repetition_penalty;
  std::optional<int64_t> top_k;
  std::vector<std::string> stop;
  bool chat = false;            // the prompt is a user message, through the chat template
  std::string system;           // with --chat: a system message first
  std::string assistant_start;  // with --chat: the beginning of the reply, which the model continues
  std::vector<std::string>
      chat_vars;  // with --chat: KEY=VALUE template variables (VALUE as JSON if it parses)
};

// --chat: the prompt as a user message (after --system's), rendered by the tokenizer's chat template
// with the assistant's turn opened. The template writes BOS and the other special tokens itself.
std::vector<int64_t> chat_prompt(const Tokenizer& tokenizer, const GenerateOptions& o) {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!o.system.empty()) messages.push_back({{"role", "system"}, {"content", o.system}});
  messages.push_back({{"role", "user"}, {"content", o.prompt}});
  if (!o.assistant_start.empty()) messages.push_back({{"role", "assistant"}, {"content", o.assistant_start}});
  nlohmann::ordered_json variables = nlohmann::ordered_json::object();
  for (const std::string& assignment : o.chat_vars) {
    const size_t equals = assignment.find('=');
    DEW_REQUIRE(equals != std::string::npos && equals > 0,
                "generate: --chat-var {}: expected KEY=VALUE (enable_thinking=false)", assignment);
    const std::string value = assignment.substr(equals + 1);
    nlohmann::ordered_json parsed = nlohmann::ordered_json::parse(value, nullptr, false);
    variables[assignment.substr(0, equals)] = parsed.is_discarded() ? nlohmann::ordered_json(value) : parsed;
  }
  ChatOptions options;
  options.add_generation_prompt = o.assistant_start.empty();
  options.continue_final_message = !o.assistant_start.empty();
  options.variables_json = variables.dump();
  return tokenizer.encode(tokenizer.apply_chat_template(messages.dump(), options).text);
}

int run_generate(const GenerateOptions& o) {
  const InferenceModel loaded = load_inference_model(o.model, o.dtype);
  const CausalLM& model = loaded.model;
  const Tokenizer tokenizer = load_inference_tokenizer(loaded);
  const GenerationDefaults defaults = generation_defaults(loaded, tokenizer);
  GenerationOptions options;
  options.max_new_tokens = o.max_new_tokens;
  options.sampling = defaults.sampling;
  options.eos_ids = defaults.eos_ids;
  SamplingOptions& s = options.sampling;
  if (o.temperature) s.temperature = *o.temperature;
  if (o.top_k) s.top_k = *o.top_k;
  if (o.top_p) s.top_p = *o.top_p;
  if (o.min_p) s.min_p = *o.min_p;
  if (o.repetition_penalty) s.repetition_penalty = *o.repetition_penalty;
  s.seed = o.seed;

  DEW_REQUIRE(o.chat || (o.system.empty() && o.chat_vars.empty() && o.assistant_start.empty()),
              "generate: --system, --assistant-start and --chat-var shape a chat prompt; add --chat");
  const std::vector<int64_t> prompt =
      o.chat ? chat_prompt(tokenizer, o) : tokenizer.encode(o.prompt, {.add_special_tokens = true});
  DEW_REQUIRE(!prompt.empty(), "generate: the prompt encodes to no tokens; expected some text");
  const int64_t context = model.config().max_position_embeddings;
  if (context > 0 && int64_t(prompt.size()) + options.max_new_tokens > context)
    fmt::print(stderr,
               "warning: {} prompt tokens and up to {} new ones run past the model's context of {} "
               "(max_position_embeddings); text past it is unlike what the model was trained on\n",
               prompt.size(), options.max_new_tokens, context);
  // EOS ends the text without being printed; stop strings end it before them.
  TextStream stream(tokenizer, o.stop, {.skip_special_tokens = true});
  options.on_token = [&](int64_t, int64_t token) {
    if (std::find(options.eos_ids.begin(), options.eos_ids.end(), token) != options.eos_ids.end())
      return false;
    std::cout << stream.push(token) << std::flush;
    return !stream.stopped();
  };
  generate(model, {prompt}, options);
  std::cout << stream.finish() << "\n" << std::flush;
  return 0;
}

}  // namespace

void add_generate(CLI::App& app, int& status) {
  auto* generate_cmd = app.add_subcommand("generate", "continue a prompt, streaming the text to stdout");
  GenerateOptions& gen = runs(generate_cmd, status, run_generate);
  generate_cmd
      ->add_option(
          "-m,--model", gen.model,
          "a Hugging Face model directory with its tokenizer, or a run directory (its newest checkpoint)")
      ->required();
  generate_cmd
      ->add_option("-p,--prompt", gen.prompt, "the text to continue (BOS added as the tokenizer says)")
      ->required();
  generate_cmd->add_option("-n,--max-new-tokens", gen.max_new_tokens, "at most this many tokens")
      ->default_val(256)
      ->check(CLI::Range(int64_t(1), kMaxNewTokens));
  generate_cmd->add_option("-s,--seed", gen.seed, "the sampling seed (same seed, same text)")->default_val(0);
  generate_cmd->add_option("--temperature", gen.temperature, "0: greedy (default: generation_config.json's)");
  generate_cmd->add_option("--top-k", gen.top_k, "keep the k likeliest tokens (0: off)");
  generate_cmd->add_option("--top-p", gen.top_p, "keep the smallest set of probability >= p");
  generate_cmd->add_option("--min-p", gen.min_p, "drop tokens below min_p x the likeliest's probability");
  generate_cmd->add_option("--repetition-penalty", gen.repetition_penalty, "divide seen tokens' logits (>1)");
  generate_cmd->add_option("--stop", gen.stop, "stop before this text (repeatable)")->allow_extra_args(false);
  generate_cmd->add_option("--dtype", gen.dtype,
                           "cast the weights (f64, f32, bf16 or f16); default: the config's");
  generate_cmd->add_flag("--chat", gen.chat, "send the prompt as a user message through the chat template");
  generate_cmd->add_option("--system", gen.system, "with --chat: a system message before the prompt");
  generate_cmd->add_option("--assistant-start", gen.assistant_start,
                           "with --chat: the beginning of the reply, which the model continues");
  generate_cmd
      ->add_option("--chat-var", gen.chat_vars,
                   "with --chat: a template variable KEY=VALUE, VALUE as JSON if it parses "
                   "(enable_thinking=false); repeatable")
      ->allow_extra_args(false);
}

}  // namespace dew::cli
