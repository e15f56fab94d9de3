// A few training steps by hand, from the parts that exist today: the data chain (lines of text,
// tokenized and packed), a small random Llama, the next-token objective over real targets only
// (lm_loss: targets in another document or in padding are ignored), backward, clipping, AdamW with
// the default groups and a warmup-cosine schedule. The loss falls. Run: build/examples/train_steps
#include <dew/autodiff.h>
#include <dew/data.h>
#include <dew/models.h>
#include <dew/tokenizer.h>
#include <dew/train.h>

#include <filesystem>
#include <fstream>
#include <iostream>

int main() {
  const auto dir = std::filesystem::temp_directory_path() / "dew_example_train_steps";
  std::filesystem::create_directories(dir / "tok");
  std::string corpus;
  for (int i = 0; i < 400; ++i)
    corpus += "the river runs past stone number " + std::to_string(i % 37) + ".\n";
  std::ofstream(dir / "corpus.txt") << corpus;
  std::ofstream(dir / "tok" / "tokenizer.json")
      << dew::train_byte_level_bpe({corpus}, {.vocab_size = 300, .special_tokens = {"<|eot|>"}});
  std::ofstream(dir / "tok" / "tokenizer_config.json") << R"({"eos_token": "<|eot|>"})";

  const int64_t T = 32, B = 4, steps = 40;
  dew::data::Chain chain =
      dew::data::Chain::text_files({(dir / "corpus.txt").string()}, dew::data::TextUnit::line, {.epochs = 0});
  chain.shuffle(1)
      .tokenize((dir / "tok").string(), {.append_eos = true})
      .pack(T)
      .batch(B)
      .cache({.enabled = false});

  dew::CausalLM model = dew::CausalLM::init(
      dew::parse_model_config(R"({"model_type": "llama", "vocab_size": 300, "hidden_size": 64,
          "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
          "max_position_embeddings": 64})",
                              "example config"),
      dew::DType::f32, /*seed=*/1);
  for (auto& [name, p] : model.parameters()) p.requires_grad_();
  const std::vector<dew::train::Param> params = dew::train::default_groups(model.parameters(), 0.1);
  auto optimizer = dew::train::make_adamw(params);  // the params share the model's tensors
  const dew::train::LrSchedule schedule{.peak_lr = 3e-3, .warmup_steps = 5, .total_steps = steps};

  double first = 0, last = 0;
  for (int64_t step = 0; step < steps; ++step) {
    const dew::data::Batch batch = *chain.next_batch();
    const dew::train::LmLoss objective = dew::train::lm_loss(model, batch);  // real next tokens only
    const dew::Tensor& loss = objective.loss;
    optimizer->zero_grad();
    dew::backward(loss);
    dew::train::clip_grad_norm(params, 1.0);
    optimizer->step(schedule.at(step));
    last = loss.to_f64_vector()[0];
    if (step == 0) first = last;
    if (step % 10 == 0 || step == steps - 1) std::cout << "step " << step << " loss " << last << "\n";
  }
  std::cout << "loss " << first << " -> " << last << (last < first ? " (falling)" : " (NOT falling)") << "\n";
  return last < first ? 0 : 1;
}
