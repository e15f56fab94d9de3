// Dew as a library: train a small Llama on a text file — a byte-level BPE learned from the text, the
// data chain (lines, tokenized, packed, batched), and the Trainer with its checkpoints and exact resume.
// Usage: train TEXT_FILE RUN_DIR [STEPS]; then: generate RUN_DIR "Some prompt"
#include <dew/data.h>
#include <dew/error.h>
#include <dew/tokenizer.h>
#include <dew/train.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: train TEXT_FILE RUN_DIR [STEPS]\n");
    return 2;
  }
  try {
    const std::filesystem::path run_dir = argv[2], tokenizer_dir = run_dir / "tokenizer";
    if (!std::filesystem::exists(tokenizer_dir / "tokenizer.json")) {
      std::ostringstream text;
      text << std::ifstream(argv[1]).rdbuf();
      std::filesystem::create_directories(tokenizer_dir);
      std::ofstream(tokenizer_dir / "tokenizer.json")
          << dew::train_byte_level_bpe({text.str()}, {.vocab_size = 512, .special_tokens = {"<|eot|>"}});
      std::ofstream(tokenizer_dir / "tokenizer_config.json") << R"({"eos_token": "<|eot|>"})";
    }
    dew::data::Chain chain =
        dew::data::Chain::text_files({argv[1]}, dew::data::TextUnit::line, {.epochs = 0});
    chain.shuffle(1).tokenize(tokenizer_dir.string(), {.append_eos = true}).pack(64).batch(8);

    dew::train::TrainerConfig config;
    config.model_json =
        R"({"model_type": "llama", "vocab_size": 512, "hidden_size": 64, "intermediate_size": 176,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64})";
    config.steps = argc > 3 ? std::stoll(argv[3]) : 100;
    config.schedule = {.peak_lr = 3e-3, .warmup_steps = 10};
    config.tokenizer = tokenizer_dir.string();  // copied into each checkpoint, so that it loads alone
    dew::train::Trainer trainer(config, std::move(chain), run_dir.string());
    trainer.on_log = [](const std::string& line) { std::printf("%s\n", line.c_str()); };
    const dew::train::Trainer::Outcome outcome = trainer.run();
    std::printf("trained %lld steps, loss %.4f; checkpoint %s\n", static_cast<long long>(outcome.step),
                outcome.last_loss, outcome.checkpoint.c_str());
    return 0;
  } catch (const dew::Error& e) {
    std::fprintf(stderr, "train: %s\n", e.what());
    return 1;
  }
}
