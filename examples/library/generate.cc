// Dew as a library: load a model and continue a prompt. MODEL is a Hugging Face model directory
// (config.json, *.safetensors, tokenizer.json) or a `dew train` run directory (its newest checkpoint).
// Usage: generate MODEL "PROMPT" [NEW_TOKENS]
#include <dew/error.h>
#include <dew/models.h>
#include <dew/tokenizer.h>
#include <dew/train.h>

#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: generate MODEL \"PROMPT\" [NEW_TOKENS]\n");
    return 2;
  }
  try {
    const std::string dir = dew::train::model_directory(argv[1]);
    const dew::CausalLM model = dew::CausalLM::load(dir);
    const dew::Tokenizer tokenizer = dew::Tokenizer::load(dir);
    dew::GenerationOptions options;
    options.max_new_tokens = argc > 3 ? std::stoll(argv[3]) : 40;
    options.sampling.temperature = 0;  // greedy; or a temperature, top_k, top_p, min_p and a seed
    if (tokenizer.eos_id()) options.eos_ids = {*tokenizer.eos_id()};
    const std::vector<int64_t> prompt = tokenizer.encode(argv[2], {.add_special_tokens = true});
    const std::vector<int64_t> continuation = dew::generate(model, {prompt}, options)[0];
    std::printf("%s%s\n", argv[2], tokenizer.decode(continuation, {.skip_special_tokens = true}).c_str());
    return 0;
  } catch (const dew::Error& e) {
    std::fprintf(stderr, "generate: %s\n", e.what());
    return 1;
  }
}
