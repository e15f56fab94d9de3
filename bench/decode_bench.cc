// Prefill of `prompt` tokens, then `new_tokens` greedy steps through the KV cache, timed separately;
// decode reads every weight once per token, so weight bytes x tokens/s is its memory rate.
#include "decode_bench.h"

#include <dew/autodiff.h>
#include <dew/models.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <fmt/core.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ceilings.h"
#include "io/command.h"
#include "llama_cpp_peer.h"

namespace dew::bench {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int run_decode_bench(const DecodeBenchOptions& o) {
  DEW_REQUIRE(o.hidden >= 64 && o.hidden % 64 == 0, "--hidden {} is not a multiple of 64 (the head size)",
              o.hidden);
  const int64_t heads = o.hidden / 64;  // grouped 3 to 1 where that divides, as Llama 3's 8B groups 4 to 1
  const ModelConfig c = parse_model_config(
      fmt::format(R"({{"model_type":"llama","vocab_size":32000,"hidden_size":{},"intermediate_size":{},
        "num_hidden_layers":{},"num_attention_heads":{},"num_key_value_heads":{},"max_position_embeddings":4096}})",
                  o.hidden, o.hidden * 8 / 3 / 64 * 64, o.layers, heads, heads % 3 == 0 ? heads / 3 : heads),
      "bench config");
  const double triad = triad_gb_per_s();
  NoGrad inference;
  const CausalLM base = CausalLM::init(c, DType::f32, 1);
  fmt::print(
      "decode: llama shape (L {}, C {}, H {}/{}, F {}, V {}), batch 1, prompt {}, {} new tokens; triad "
      "{:.1f} GB/s\n",
      c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.intermediate_size,
      c.vocab_size, o.prompt, o.new_tokens, triad);
  fmt::print("{:<6} {:>10} {:>12} {:>12} {:>14} {:>10}\n", "dtype", "params (M)", "prefill tok/s",
             "decode tok/s", "weights GB/s", "of triad");
  std::string rows, llama_rows, llama_why;
  for (DType dt : {DType::f32, DType::bf16}) {
    CausalLM model = base.to(dt);
    model.pack_projections();  // as dew generate runs it
    int64_t params = 0, bytes = 0;
    for (const auto& [name, t] : model.parameters()) {
      params += t.numel();
      bytes += t.numel() * int64_t(dtype_size(t.dtype()));
    }
    std::vector<double> ids, positions;
    for (int64_t t = 0; t < o.prompt; ++t)
      ids.push_back(double((t * 7919) % c.vocab_size)), positions.push_back(double(t));
    // Two passes: the first warms what is made once per shape (oneDNN's JIT kernels, the allocator's
    // blocks), the second is timed.
    double prefill = 0, decode = 0;
    for (int pass = 0; pass < 2; ++pass) {
      KvCache cache;
      auto t0 = std::chrono::steady_clock::now();
      Tensor logits = model.forward(Tensor::from_values(ids, {1, o.prompt}, DType::i64),
                                    Tensor::from_values(positions, {1, o.prompt}, DType::i64), &cache);
      prefill = seconds_since(t0);
      t0 = std::chrono::steady_clock::now();
      for (int64_t s = 0; s < o.new_tokens; ++s) {
        const double next = argmax(logits.select(1, logits.size(1) - 1), -1).to_f64_vector()[0];
        logits = model.forward(Tensor::full({1, 1}, next, DType::i64),
                               Tensor::full({1, 1}, double(o.prompt + s), DType::i64), &cache);
      }
      decode = seconds_since(t0);
    }
    const double prefill_rate = double(o.prompt) / prefill, decode_rate = double(o.new_tokens) / decode;
    const double weight_rate = double(bytes) * decode_rate / 1e9;
    fmt::print("{:<6} {:>10.1f} {:>12.0f} {:>12.1f} {:>14.2f} {:>9.0f}%\n", dtype_name(dt),
               double(params) / 1e6, prefill_rate, decode_rate, weight_rate, 100 * weight_rate / triad);
    rows += fmt::format(
        R"({}{{"dtype":"{}","parameters":{},"prefill_tokens_per_s":{:.1f},"decode_tokens_per_s":{:.2f},"weight_gb_per_s":{:.3f}}})",
        rows.empty() ? "" : ",", dtype_name(dt), params, prefill_rate, decode_rate, weight_rate);
    // llama.cpp on the same weights (its f16 KV cache and its own kernels), when tools/llama-cpp is there.
    if (o.llama_cpp && llama_why.empty())
      for (const LlamaCppSpeed& peer : llama_cpp_speed(model, dt, o.prompt, o.new_tokens, llama_why)) {
        fmt::print("{:<6} {:>10} {:>12.0f} {:>12.1f}   ({}, {} thread{})\n", dtype_name(dt), "",
                   peer.prefill_tokens_per_s, peer.decode_tokens_per_s, llama_cpp_version(), peer.threads,
                   peer.threads == 1 ? "" : "s");
        llama_rows += fmt::format(
            R"({}{{"dtype":"{}","threads":{},"prefill_tokens_per_s":{:.1f},"decode_tokens_per_s":{:.2f}}})",
            llama_rows.empty() ? "" : ",", dtype_name(dt), peer.threads, peer.prefill_tokens_per_s,
            peer.decode_tokens_per_s);
      }
  }
  if (!llama_why.empty()) fmt::print("({})\n", llama_why);
  // PyTorch on the same checkpoint, when Debian's python3-torch is installed.
  std::string torch_json = "null";
  if (o.pytorch && std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0) {
    const std::string dir = (std::filesystem::temp_directory_path() / "dew_bench_decode_model").string();
    base.save(dir);
    const std::string command =
        fmt::format("/usr/bin/python3 {}/tools/torch_reference/bench_decode.py {} {} {} {}", DEW_SOURCE_DIR,
                    dir, o.prompt, o.new_tokens, num_threads());
    const CommandResult python = run_command(command);
    const nlohmann::json torch =
        python.exit_code == 0 ? nlohmann::json::parse(python.out, nullptr, false) : nlohmann::json();
    if (torch.is_object()) {
      torch_json = torch.dump();
      for (const auto& row : torch["rows"])
        fmt::print("{:<6} {:>10} {:>12.0f} {:>12.1f}   (PyTorch {})\n", row["dtype"].get<std::string>(), "",
                   row["prefill_tokens_per_s"].get<double>(), row["decode_tokens_per_s"].get<double>(),
                   torch["torch"].get<std::string>());
    }
    std::filesystem::remove_all(dir);
  } else {
    if (o.pytorch) fmt::print("(no PyTorch: apt-get install python3-torch for the comparison)\n");
  }
  fmt::print(
      R"({{"bench":"decode","prompt":{},"new_tokens":{},"triad_gb_s":{:.2f},"rows":[{}],"pytorch":{},"llama_cpp":[{}]}})"
      "\n",
      o.prompt, o.new_tokens, triad, rows, torch_json, llama_rows);
  return 0;
}

}  // namespace dew::bench
