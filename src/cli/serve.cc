// `dew serve --model DIR [--host 127.0.0.1] [--port 8000] [--api-key KEY] [...]`: the OpenAI-compatible
// HTTP server over the continuous-batching engine (docs/serving.md). SIGTERM or SIGINT: stop accepting,
// let running requests finish for --drain-seconds, cancel the rest, exit 0.
#include <dew/serve.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/inference_model.h"
#include "cli/stop_signals.h"
#include "serve/engine_loop.h"
#include "serve/http_server.h"

namespace dew::cli {
namespace {

struct ServeOptions {
  std::string model, dtype, kv_dtype, host = "127.0.0.1", api_key, served_model_name, kv_memory = "1G";
  int port = 8000;
  int64_t kv_blocks = 0, block_size = 16, max_step_tokens = 512, max_running = 64, max_waiting = 256;
  int64_t max_body_bytes = int64_t(1) << 20, max_connections = 256;
  double idle_seconds = 60, request_seconds = 10, drain_seconds = 30;
  bool no_prefix_caching = false, batch_invariant = false;
};

// 512M, 2G, 1073741824: bytes with an optional K, M or G (powers of 1024).
int64_t parse_bytes(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  const std::string unit(end);
  const double scale = unit.empty()  ? 1
                       : unit == "K" ? 1024.0
                       : unit == "M" ? 1048576.0
                       : unit == "G" ? 1073741824.0
                                     : 0;
  DEW_REQUIRE(end != text.c_str() && scale > 0 && value > 0,
              "serve: --kv-memory {}: expected bytes, optionally with K, M or G (512M, 2G)", text);
  return int64_t(value * scale);
}

std::chrono::milliseconds millis(double seconds) {
  return std::chrono::milliseconds(int64_t(seconds * 1000));
}

int run_serve(const ServeOptions& o) {
  // Before any thread starts (NOTE [signals by sigwait]).
  StopSignals signals("no new requests; the running ones finish or are cancelled (again to stop at once)",
                      "the running requests are cut off");
  const InferenceModel loaded = load_inference_model(o.model, o.dtype);
  const Tokenizer tokenizer = load_inference_tokenizer(loaded);
  const GenerationDefaults defaults = generation_defaults(loaded, tokenizer);
  const ModelConfig& config = loaded.model.config();

  serve::EngineOptions engine;
  engine.kv_dtype =
      o.kv_dtype.empty()
          ? (loaded.model.parameters().begin()->second.dtype() == DType::bf16 ? DType::bf16 : DType::f32)
          : parse_dtype(o.kv_dtype);
  engine.block_size = o.block_size;
  engine.kv_memory = parse_bytes(o.kv_memory);
  engine.kv_blocks = o.kv_blocks;
  engine.max_step_tokens = o.max_step_tokens;
  engine.max_running = o.max_running;
  engine.prefix_caching = !o.no_prefix_caching;
  engine.batch_invariant = o.batch_invariant;
  engine.eos_ids = defaults.eos_ids;
  serve::EngineLoop loop(loaded.model, tokenizer, engine, o.max_waiting);

  serve::ApiContext api;
  api.tokenizer = &tokenizer;
  // The name the user gave the model (a run directory's, not its checkpoint's), unless told another.
  const std::filesystem::path given = std::filesystem::path(o.model).lexically_normal();
  api.model_name = !o.served_model_name.empty() ? o.served_model_name
                   : given.has_filename()       ? given.filename().string()
                                                : given.parent_path().filename().string();
  api.context = config.max_position_embeddings;
  const int64_t pool_blocks = loop.stats().kv_blocks;
  api.max_request_tokens = pool_blocks * o.block_size;
  api.defaults = defaults.sampling;

  serve::ServerOptions server;
  server.host = o.host;
  server.port = o.port;
  server.api_key = o.api_key.empty() && std::getenv("DEW_API_KEY") ? std::getenv("DEW_API_KEY") : o.api_key;
  server.max_body_bytes = o.max_body_bytes;
  server.max_connections = o.max_connections;
  server.idle_timeout = millis(o.idle_seconds);
  server.request_timeout = millis(o.request_seconds);
  server.drain_grace = millis(o.drain_seconds);
  serve::HttpServer http(loop, api, server);
  std::cerr << fmt::format("dew serve: {} ({} KV blocks of {} tokens, {}) listening on http://{}:{}\n",
                           api.model_name, pool_blocks, o.block_size, dtype_name(engine.kv_dtype),
                           o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host, http.port())
            << std::flush;
  http.run(signals.requested());
  std::cerr << "dew serve: stopped\n";
  return 0;
}

}  // namespace

void add_serve(CLI::App& app, int& status) {
  auto* cmd =
      app.add_subcommand("serve", "an OpenAI-compatible HTTP server over a continuous-batching engine");
  ServeOptions& o = runs(cmd, status, run_serve);
  cmd->add_option("-m,--model", o.model,
                  "a Hugging Face model directory with its tokenizer, or a run directory")
      ->required();
  cmd->add_option("--dtype", o.dtype, "f32 or bf16 (default: the checkpoint's)");
  cmd->add_option("--host", o.host, "the address to listen on (loopback unless told)")
      ->default_val("127.0.0.1");
  cmd->add_option("--port", o.port, "the port (0: any free one, printed)")
      ->default_val(8000)
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--api-key", o.api_key, "require Authorization: Bearer KEY on /v1 (or DEW_API_KEY)");
  cmd->add_option("--served-model-name", o.served_model_name,
                  "the model's name in the API (default: the directory's)");
  cmd->add_option("--kv-memory", o.kv_memory, "bytes for the KV cache (512M, 2G)")->default_val("1G");
  cmd->add_option("--kv-blocks", o.kv_blocks, "blocks in the KV cache (instead of --kv-memory)");
  cmd->add_option("--block-size", o.block_size, "tokens per KV block")
      ->default_val(16)
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--kv-dtype", o.kv_dtype, "f32 or bf16 KV blocks (default: the model's)");
  cmd->add_option("--max-step-tokens", o.max_step_tokens,
                  "tokens per engine step: decodes plus prompt chunks")
      ->default_val(512)
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  cmd->add_option("--max-running", o.max_running, "sequences per step")
      ->default_val(64)
      ->check(CLI::Range(int64_t(1), int64_t(4096)));
  cmd->add_option("--max-waiting", o.max_waiting, "queued sequences before requests get 503")
      ->default_val(256);
  cmd->add_option("--max-body-bytes", o.max_body_bytes, "largest request body")
      ->default_val(int64_t(1) << 20);
  cmd->add_option("--max-connections", o.max_connections, "open connections before new ones get 503")
      ->default_val(256);
  cmd->add_option("--idle-timeout", o.idle_seconds,
                  "seconds a kept-alive connection may wait between requests")
      ->default_val(60);
  cmd->add_option("--request-timeout", o.request_seconds, "seconds for a request's header and body to arrive")
      ->default_val(10);
  cmd->add_option("--drain-seconds", o.drain_seconds, "on SIGTERM: seconds running requests may finish")
      ->default_val(30);
  cmd->add_flag("--no-prefix-caching", o.no_prefix_caching, "do not reuse cached prompt blocks");
  cmd->add_flag("--batch-invariant", o.batch_invariant,
                "a request's logprobs bit-identical alone or batched (slower; docs/serving.md)");
}

}  // namespace dew::cli
