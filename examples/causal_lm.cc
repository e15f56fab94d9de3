// Loads a causal language model from a Hugging Face directory (config.json + safetensors) and prints
// the greedy next token after each position of a few ids. Without an argument it first writes a
// small random Qwen3 model to a temporary directory and loads that.
// Usage: causal_lm [MODEL_DIR]
#include <dew/models.h>
#include <dew/ops.h>

#include <filesystem>

int main(int argc, char** argv) {
  std::string dir;
  if (argc > 1) {
    dir = argv[1];
  } else {
    dir = (std::filesystem::temp_directory_path() / "dew_causal_lm_example").string();
    const dew::ModelConfig config = dew::parse_model_config(
        R"({"model_type":"qwen3","vocab_size":256,"hidden_size":128,"intermediate_size":384,"num_hidden_layers":2,
          "num_attention_heads":4,"num_key_value_heads":2,"head_dim":32,"max_position_embeddings":512,
          "rope_theta":1000000,"tie_word_embeddings":true})",
        "example config");
    dew::CausalLM::init(config, dew::DType::bf16, 42).save(dir);
  }
  const dew::CausalLM model = dew::CausalLM::load(dir, dew::DType::f32);
  const dew::ModelConfig& c = model.config();
  fmt::print("{}: {} layers, hidden {}, {} heads ({} kv), vocab {}, {} parameter tensors\n", c.model_type,
             c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.num_key_value_heads, c.vocab_size,
             model.parameters().size());
  const std::vector<double> ids = {1, 17, 42, 99, 7, 3};
  std::vector<double> positions;
  for (size_t t = 0; t < ids.size(); ++t) positions.push_back(double(t));
  const int64_t T = int64_t(ids.size());
  const dew::Tensor logits = model.forward(dew::Tensor::from_values(ids, {1, T}, dew::DType::i64),
                                           dew::Tensor::from_values(positions, {1, T}, dew::DType::i64));
  const std::vector<double> next = dew::argmax(logits, -1).to_f64_vector();
  for (int64_t t = 0; t < T; ++t)
    fmt::print("after id {:>5}: greedy next id {}\n", ids[size_t(t)], next[size_t(t)]);
  return 0;
}
