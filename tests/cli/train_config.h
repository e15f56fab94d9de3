// A run directory for `dew train` tests: a small corpus, a byte-level BPE trained on it (with an
// end-of-text token), and run.toml training `model` (a [model] table's fields) on it for 12 steps.
#pragma once

#include <dew/tokenizer.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace dew::testing {

inline constexpr const char* kTinyLlama = R"(model_type = "llama"
vocab_size = 300
hidden_size = 32
intermediate_size = 64
num_hidden_layers = 1
num_attention_heads = 4
num_key_value_heads = 2
max_position_embeddings = 64)";

// The [model] fields of a DiT small enough for a test: 8 x 8 gray images, 3 classes.
inline constexpr const char* kTinyDit = R"(model_type = "dit"
image_size = 8
patch_size = 2
hidden_size = 16
depth = 1
num_heads = 2
num_classes = 3
frequency_embedding_size = 16
time_scale = 1000.0
)";

// A [data] chain of 8-image batches from images.idx and labels.idx (DataDir::write_idx_images).
inline constexpr const char* kTinyImagesData = R"([data.source]
kind = "idx_images"
images = "images.idx"
labels = "labels.idx"
epochs = 0
[[data.stage]]
kind = "batch"
size = 8
)";

inline std::string train_config(const std::string& name, const std::string& model = kTinyLlama) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/tok");
  std::string text;
  for (int i = 0; i < 300; ++i) text += "a small river " + std::to_string(i % 13) + " runs by the stone\n";
  std::ofstream(dir + "/corpus.txt") << text;
  std::ofstream(dir + "/tok/tokenizer.json")
      << train_byte_level_bpe({text}, {.vocab_size = 300, .special_tokens = {"<|eot|>"}});
  std::ofstream(dir + "/tok/tokenizer_config.json") << R"({"eos_token": "<|eot|>"})";
  std::ofstream(dir + "/run.toml") << "[model]\n"
                                   << model << R"(

[train]
steps = 12
log_every = 4
checkpoint_every = 4
tokenizer = "tok"

[schedule]
peak_lr = 3e-3

[data]
source = { kind = "text", paths = ["corpus.txt"], unit = "line", epochs = 0 }
stage = [{ kind = "tokenize", tokenizer = "tok", append_eos = true }, { kind = "pack", T = 16 },
         { kind = "batch", size = 4 }]
)";
  return dir;
}

}  // namespace dew::testing
