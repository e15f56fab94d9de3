// Encodes and decodes text with a Hugging Face tokenizer (a tokenizer.json, or a directory holding
// one with its tokenizer_config.json). Without an argument it first trains a small byte-level BPE on
// a paragraph and loads that — the same file format the Hugging Face tokenizers read.
// Usage: tokenizer [TOKENIZER_DIR] [TEXT]
#include <dew/tokenizer.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <fstream>

int main(int argc, char** argv) {
  std::string dir;
  if (argc > 1) {
    dir = argv[1];
  } else {
    const std::string paragraph =
        "A tokenizer turns text into the integer ids a language model reads, and ids back into text. "
        "Byte-pair encoding starts from the 256 byte values and merges the most frequent adjacent pair "
        "again and again, so frequent words become single tokens and rare ones stay spelled out.\n";
    std::string corpus;
    for (int i = 0; i < 50; ++i) corpus += paragraph;
    dew::BpeTrainOptions options;
    options.vocab_size = 400;
    options.special_tokens = {"<|endoftext|>"};
    dir = (std::filesystem::temp_directory_path() / "dew_tokenizer_example").string();
    std::filesystem::create_directories(dir);
    std::ofstream(std::filesystem::path(dir) / "tokenizer.json")
        << dew::train_byte_level_bpe({corpus}, options);
  }
  const dew::Tokenizer tokenizer = dew::Tokenizer::load(dir);
  const std::string text = argc > 2 ? argv[2] : "Frequent words become single tokens.<|endoftext|>";

  const std::vector<int64_t> ids = tokenizer.encode(text);
  fmt::print("{} tokens in the vocabulary\n", tokenizer.vocab_size());
  fmt::print("encode({:?}) = {}\n", text, ids);
  std::vector<std::string> pieces;
  for (int64_t id : ids) pieces.push_back(tokenizer.id_to_token(id));
  fmt::print("tokens: {}\n", pieces);
  fmt::print("decode: {:?}\n", tokenizer.decode(ids));
  fmt::print("decode without special tokens: {:?}\n", tokenizer.decode(ids, {.skip_special_tokens = true}));
  return tokenizer.decode(ids) == text ? 0 : 1;  // a byte-level BPE loses nothing
}
