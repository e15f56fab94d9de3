// The GGUF file needs a vocabulary of the model's size; a bench model has no tokenizer, so it gets a
// synthetic byte-level BPE: the 256 byte tokens, then letter strings merged a letter at a time.
#include "llama_cpp_peer.h"

#include <dew/tokenizer.h>
#include <fmt/core.h>

#include <deque>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "io/command.h"
#include "io/files.h"
#include "tokenize/byte_level.h"

namespace dew::bench {
namespace {

namespace fs = std::filesystem;

const fs::path kLlamaCpp = fs::path(DEW_SOURCE_DIR) / "tools" / "llama-cpp";

// A byte-level BPE of exactly `vocab_size` tokens, with the pre-tokenizer and decoder of the BPE Dew
// trains (Llama 3's pattern), so that llama.cpp loads it under a name it knows.
Tokenizer tokenizer_of_size(int64_t vocab_size) {
  const std::string_view sample = "a";
  nlohmann::json spec = nlohmann::json::parse(train_byte_level_bpe({sample}, {.vocab_size = 256}));
  const tokenize::ByteLevelAlphabet alphabet;
  nlohmann::json vocab = nlohmann::json::object(), merges = nlohmann::json::array();
  for (int b = 0; b < 256; ++b) vocab[alphabet.text_of_byte[size_t(b)]] = b;
  std::deque<std::string> grow;  // breadth first: every letter string gets each letter appended
  for (char c = 'a'; c <= 'z'; ++c) grow.emplace_back(1, c);
  for (int64_t id = 256; id < vocab_size; grow.pop_front())
    for (char c = 'a'; c <= 'z' && id < vocab_size; ++c, ++id) {
      merges.push_back(grow.front() + " " + std::string(1, c));
      vocab[grow.front() + c] = id;
      grow.push_back(grow.front() + c);
    }
  spec["model"]["vocab"] = vocab;
  spec["model"]["merges"] = merges;
  spec["added_tokens"] = nlohmann::json::array();
  return Tokenizer::from_json(spec.dump(), "", "the bench's synthetic BPE");
}

}  // namespace

std::string llama_cpp_version() {
  const fs::path package = kLlamaCpp / "node_modules" / "node-llama-cpp" / "package.json";
  if (!fs::exists(package) || !fs::exists(kLlamaCpp / "node_modules" / "@node-llama-cpp" / "linux-x64"))
    return "";
  const nlohmann::json j = nlohmann::json::parse(read_text_file(package.string()), nullptr, false);
  return j.is_object() ? "node-llama-cpp " + j.value("version", "?") : "";
}

std::vector<LlamaCppSpeed> llama_cpp_speed(const CausalLM& model, DType dtype, int64_t prompt,
                                           int64_t new_tokens, std::string& why) {
  if (llama_cpp_version().empty() || run_command("node --version >/dev/null 2>&1").exit_code != 0) {
    why = "no llama.cpp: tools/setup-debian.sh installs it with npm";
    return {};
  }
  const int64_t vocab = model.config().vocab_size;
  const std::string gguf =
      (fs::temp_directory_path() / fmt::format("dew_bench_{}_{}.gguf", dtype_name(dtype), ::getpid()))
          .string();
  save_gguf(model, tokenizer_of_size(vocab), gguf, dtype);
  std::vector<LlamaCppSpeed> speeds;
  for (int threads : {1, 2}) {
    const CommandResult r =
        run_command(fmt::format("node {} {} speed {} {} {} {} 2>&1", (kLlamaCpp / "run.mjs").string(), gguf,
                                prompt, new_tokens, threads, vocab));
    const size_t line = r.out.rfind('\n', r.out.size() - 2);
    const nlohmann::json j =
        nlohmann::json::parse(r.out.substr(line == std::string::npos ? 0 : line + 1), nullptr, false);
    if (r.exit_code != 0 || !j.is_object() || !j.contains("decode_tokens_per_s")) {
      why = "llama.cpp failed: " + r.out.substr(0, 400);
      speeds.clear();
      break;
    }
    speeds.push_back(
        {threads, j["prefill_tokens_per_s"].get<double>(), j["decode_tokens_per_s"].get<double>()});
  }
  fs::remove(gguf);
  return speeds;
}

}  // namespace dew::bench
