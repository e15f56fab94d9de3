// The data chain from C++: lines of text → shuffled → tokenized (with EOS) → packed windows → batches
// of 4, then the position after two batches and a second chain resumed from it, which yields the
// same third batch. Run: build/examples/data_chain [TEXT_FILE TOKENIZER_DIR]; without arguments it
// writes a small corpus and trains a tokenizer for it first.
#include <dew/data.h>
#include <dew/tokenizer.h>

#include <filesystem>
#include <fstream>
#include <iostream>

namespace {

dew::data::Chain make_chain(const std::string& text, const std::string& tokenizer) {
  dew::data::Chain chain = dew::data::Chain::text_files({text}, dew::data::TextUnit::line, {.epochs = 0});
  chain.shuffle(/*seed=*/1)
      .tokenize(tokenizer, {.append_eos = true, .workers = 2})
      .pack(/*T=*/32)
      .batch(/*global_size=*/4)
      .prefetch(/*batches=*/2);
  return chain;
}

}  // namespace

int main(int argc, char** argv) {
  std::string text, tokenizer;
  if (argc == 3) {
    text = argv[1], tokenizer = argv[2];
  } else {
    const auto dir = std::filesystem::temp_directory_path() / "dew_example_data_chain";
    std::filesystem::create_directories(dir / "tok");
    std::string corpus;
    for (int i = 0; i < 200; ++i) corpus += "line " + std::to_string(i) + " of a small corpus about rivers\n";
    std::ofstream(dir / "corpus.txt") << corpus;
    std::ofstream(dir / "tok" / "tokenizer.json")
        << dew::train_byte_level_bpe({corpus}, {.vocab_size = 320, .special_tokens = {"<|eot|>"}});
    std::ofstream(dir / "tok" / "tokenizer_config.json") << R"({"eos_token": "<|eot|>"})";
    text = (dir / "corpus.txt").string(), tokenizer = (dir / "tok").string();
  }
  dew::data::Chain chain = make_chain(text, tokenizer);
  std::cout << chain.show();
  chain.next_batch();
  chain.next_batch();
  const std::string position = chain.position();  // what a checkpoint stores
  const dew::data::Batch third = *chain.next_batch();

  dew::data::Chain resumed = make_chain(text, tokenizer);
  resumed.resume(position);
  const dew::data::Batch again = *resumed.next_batch();
  const int64_t n = third.tokens.numel();
  const bool same =
      again.index == third.index && std::equal(third.tokens.data<int64_t>(), third.tokens.data<int64_t>() + n,
                                               again.tokens.data<int64_t>());
  std::cout << "batch " << third.index << ": " << third.real_tokens << " real tokens; first row decoded:\n"
            << chain.tokenizer()->decode(std::vector<int64_t>(
                   third.tokens.data<int64_t>(), third.tokens.data<int64_t>() + third.tokens.shape()[1]))
            << "\nresumed chain's batch " << again.index << (same ? " is the same" : " DIFFERS") << "\n";
  return same ? 0 : 1;
}
