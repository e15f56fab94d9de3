// Writes a small checkpoint in Hugging Face's safetensors layout (sharded, with its index), opens it
// again and prints what it holds — the calls a model loader and a trainer's checkpoint make.
// Usage: checkpoint_files [DIRECTORY] (default: a fresh directory under /tmp).
#include <dew/safetensors.h>

#include <filesystem>

int main(int argc, char** argv) {
  const std::string dir =
      argc > 1 ? argv[1] : (std::filesystem::temp_directory_path() / "dew_checkpoint_example").string();
  std::filesystem::remove_all(dir);
  std::vector<std::pair<std::string, dew::Tensor>> weights = {
      {"model.embed_tokens.weight", dew::Tensor::full({256, 64}, 0.02, dew::DType::bf16)},
      {"model.layers.0.input_layernorm.weight", dew::Tensor::full({64}, 1.0, dew::DType::f32)},
      {"model.layers.0.mlp.up_proj.weight", dew::Tensor::full({128, 64}, -0.5, dew::DType::bf16)},
  };
  // Shards of at most 40 kB: the embedding (32 kB) fills the first, the rest go to a second.
  dew::save_safetensors_checkpoint(dir, weights, 40'000);
  const dew::SafetensorsCheckpoint checkpoint = dew::SafetensorsCheckpoint::open(dir);
  for (const std::string& name : checkpoint.names()) {
    const dew::SafetensorsEntry* e = checkpoint.find(name);
    fmt::print("{:<40} {:<5} {:<10} {} bytes\n", name, e->dtype, dew::shape_str(e->shape), e->nbytes());
  }
  const dew::Tensor norm = checkpoint.load("model.layers.0.input_layernorm.weight");
  fmt::print("{} files in {}; the norm weight loads back as {} with first value {}\n",
             checkpoint.files().size(), dir, norm.describe(), norm.to_f64_vector()[0]);
  return norm.to_f64_vector()[0] == 1.0 ? 0 : 1;
}
