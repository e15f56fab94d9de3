// One forward + backward of GPT-2 small (V 50257, C 768, H 12, f32) with a cross-entropy loss; bytes
// in use are read before, after the forward and at the peak. llm.c's count is its train_gpt2.c
// activation list for the same (B, T, L): NOTE [llm.c activation count].
#include "memory_bench.h"

#include <dew/autodiff.h>
#include <dew/models.h>
#include <dew/ops.h>
#include <dew/runtime.h>
#include <fmt/core.h>

#include <chrono>

namespace dew::bench {
namespace {

// NOTE [llm.c activation count]: train_gpt2.c's fill_in_activation_sizes keeps, per layer, ln1 (BTC),
// its mean and rstd (2 BT), qkv (3 BTC), atty (BTC), preatt and att (2 B NH T T), attproj, residual2,
// ln2 (3 BTC), ln2's mean and rstd (2 BT), fch and fch_gelu (8 BTC), fcproj and residual3 (2 BTC); and
// once: encoded (BTC), lnf (BTC), its mean and rstd (2 BT), logits and probs (2 BTV), losses (BT).
// f32 throughout. Its backward allocates a second buffer of the same size for the activations'
// gradients (grads_acts).
int64_t llmc_activation_floats(int64_t B, int64_t T, int64_t C, int64_t L, int64_t NH, int64_t V) {
  const int64_t BT = B * T, BTC = BT * C;
  const int64_t per_layer =
      BTC + 2 * BT + 3 * BTC + BTC + 2 * B * NH * T * T + 3 * BTC + 2 * BT + 8 * BTC + 2 * BTC;
  return L * per_layer + BTC + BTC + 2 * BT + 2 * BT * V + BT;
}

double mb(int64_t bytes) {
  return double(bytes) / 1e6;
}

}  // namespace

int run_memory_bench(const MemoryBenchOptions& o) {
  ModelConfig c = parse_model_config(
      fmt::format(
          R"({{"model_type":"gpt2","vocab_size":50257,"n_embd":768,"n_layer":{},"n_head":12,"n_positions":1024}})",
          o.layers),
      "gpt2-small");
  const int64_t B = o.batch, T = o.tokens, V = c.vocab_size;
  CausalLM model = CausalLM::init(c, DType::f32, 1);
  int64_t parameter_bytes = 0;
  for (auto& [name, t] : model.parameters()) {
    t.requires_grad_();
    parameter_bytes += t.numel() * int64_t(dtype_size(t.dtype()));
  }
  Tensor ids = Tensor::empty({B, T}, DType::i64), targets = Tensor::empty({B * T}, DType::i64);
  fill_randint(ids, {2, 0, 0}, 0, V);
  fill_randint(targets, {2, 1, 0}, 0, V);
  std::vector<double> pos;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) pos.push_back(double(t));
  const Tensor positions = Tensor::from_values(pos, {B, T}, DType::i64);

  // Step 1 creates the parameters' gradients; step 2 accumulates into them (as a step of gradient
  // accumulation does), so its peak beyond the bytes held before it is exactly the activations and
  // the backward's transients.
  auto step = [&](int64_t& after_forward) {
    const Tensor loss = cross_entropy(model.forward(ids, positions).reshape({B * T, V}), targets).loss;
    after_forward = cpu_memory_stats().bytes_in_use;
    backward(loss);
  };
  int64_t after_forward = 0;
  const int64_t before_first = cpu_memory_stats().bytes_in_use;
  reset_peak_memory();
  step(after_forward);
  const int64_t first_peak = cpu_memory_stats().peak_bytes - before_first;
  const int64_t before = cpu_memory_stats().bytes_in_use;
  reset_peak_memory();
  const auto t0 = std::chrono::steady_clock::now();
  step(after_forward);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const MemoryStats m = cpu_memory_stats();
  int64_t gradient_bytes = 0;
  for (const auto& [name, t] : model.parameters())
    if (t.grad().defined()) gradient_bytes += t.grad().numel() * int64_t(dtype_size(t.grad().dtype()));
  const int64_t held = after_forward - before;  // saved for backward (+ logits, loss)
  const int64_t peak = m.peak_bytes - before;   // activations and transients at the peak
  const int64_t llmc =
      4 * llmc_activation_floats(B, T, c.hidden_size, c.num_hidden_layers, c.num_attention_heads, V);

  fmt::print(
      "memory: GPT-2 small shape (L {}, C 768, H 12, V {}), B {} T {}, f32, one forward + backward ({:.1f} "
      "s)\n",
      c.num_hidden_layers, V, B, T, seconds);
  fmt::print("{:<58} {:>10}\n", "what", "MB");
  fmt::print("{:<58} {:>10.1f}\n", "parameters", mb(parameter_bytes));
  fmt::print("{:<58} {:>10.1f}\n", "parameter gradients", mb(gradient_bytes));
  fmt::print("{:<58} {:>10.1f}\n", "held after the forward (saved for backward)", mb(held));
  fmt::print("{:<58} {:>10.1f}\n", "peak beyond parameters and gradients (step 2)", mb(peak));
  fmt::print("{:<58} {:>10.1f}\n", "peak beyond parameters, gradients included (step 1)", mb(first_peak));
  fmt::print("{:<58} {:>10.1f}\n", "llm.c: activations (acts)", mb(llmc));
  fmt::print("{:<58} {:>10.1f}\n", "llm.c: activations and their gradients (acts + grads_acts)",
             mb(2 * llmc));
  fmt::print("peak / llm.c acts = {:.3f}\n", double(peak) / double(llmc));
  fmt::print(
      "{{\"bench\":\"memory\",\"layers\":{},\"batch\":{},\"tokens\":{},\"parameter_bytes\":{},\"gradient_"
      "bytes\":{},"
      "\"held_after_forward\":{},\"peak_activation_bytes\":{},\"first_step_peak_bytes\":{},\"llmc_activation_"
      "bytes\":{},\"ratio\":{:.4f},"
      "\"seconds\":{:.3f}}}\n",
      c.num_hidden_layers, B, T, parameter_bytes, gradient_bytes, held, peak, first_peak, llmc,
      double(peak) / double(llmc), seconds);
  return 0;
}

}  // namespace dew::bench
