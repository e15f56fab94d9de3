// libFuzzer target for tokenizer.json: the input up to its first NUL byte is the file, the rest a text.
// Either the file loads and the text encodes and decodes back without fault, or a dew::Error says
// what is wrong. A crash, an out-of-bounds read, undefined behaviour or another exception is a bug.
#include <dew/error.h>
#include <dew/tokenizer.h>

#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  const std::string_view json = input.substr(0, split);
  const std::string_view text =
      split == std::string_view::npos ? std::string_view() : input.substr(split + 1);
  try {
    const dew::Tokenizer tokenizer = dew::Tokenizer::from_json(json, "", "fuzz tokenizer.json");
    const std::vector<int64_t> ids = tokenizer.encode(text, {.add_special_tokens = true});
    for (const int64_t id : ids)
      if (id < 0 || id >= tokenizer.vocab_size()) __builtin_trap();  // encode gives only its own ids
    (void)tokenizer.decode(ids);
    return 0;
  } catch (const dew::Error&) {
    return 0;
  }
}
