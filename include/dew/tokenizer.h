// Tokenizers from Hugging Face files: tokenizer.json (normalizer, pre-tokenizer, BPE model, added
// tokens, post-processor, decoder) with tokenizer_config.json beside it. Ids equal those of the
// Hugging Face tokenizers on the same files (tests/tokenize/ against tokenizers.js). A component Dew
// does not implement is refused by name when the file is loaded, never skipped.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dew {

struct EncodeOptions {
  // Run the post-processor (BOS/EOS templates, tokenizer_config's add_bos_token/add_eos_token).
  // Leading special tokens the text already begins with are not added again (NOTE [no doubled BOS]).
  bool add_special_tokens = false;
};

struct DecodeOptions {
  bool skip_special_tokens = false;  // false: special tokens are written as their text
  // tokenizer_config's clean_up_tokenization_spaces (" ." → "." ...) unless set here.
  std::optional<bool> clean_up_tokenization_spaces;
};

// How a conversation becomes a prompt through the tokenizer's chat template (transformers'
// apply_chat_template).
struct ChatOptions {
  // End with the opening of the assistant's turn, so that generation continues as the assistant.
  bool add_generation_prompt = false;
  // End inside the final message instead, so that generation continues it (a reply begun for the
  // model); the text stops right after that message's content, as transformers cuts it.
  bool continue_final_message = false;
  std::string tools_json;      // a JSON array of tool schemas, the template's `tools`; empty: none
  std::string variables_json;  // a JSON object of further template variables ({"enable_thinking": false})
  // tokenizer_config.json may list several named templates; empty picks "default".
  std::string template_name;
};

struct ChatPrompt {
  std::string text;  // encode it without add_special_tokens: the template writes them
  // Byte ranges [begin, end) of `text` that the template marks as the assistant's ({% generation %}).
  std::vector<std::pair<size_t, size_t>> assistant_spans;
};

// A tokenizer as a GGUF file's tokenizer.ggml.* keys hold it, in llama.cpp's terms (models.h's
// save_gguf writes it).
struct GgufVocabulary {
  std::string model = "gpt2";        // llama.cpp's byte-level BPE
  std::string pre;                   // its pre-tokenizer: "llama-bpe" (Llama 3), "qwen2", "gpt-2"
  std::vector<std::string> tokens;   // by id
  std::vector<int32_t> token_types;  // by id: 1 normal, 3 control (special), 4 user-defined, 5 unused
  std::vector<std::string> merges;   // "left right", in the file's order
  std::optional<int64_t> bos, eos;
  bool add_bos = false;  // encode's add_special_tokens puts the BOS first
};

class Tokenizer {
 public:
  // `path` is a tokenizer.json or a directory holding one; tokenizer_config.json is read from the same
  // directory when present, and chat_template.jinja (which takes the place of tokenizer_config's
  // chat_template, as in transformers). Errors name the file and the component.
  static Tokenizer load(const std::string& path);
  // From the two files' text (`config_json` may be empty); `source` names them in errors.
  static Tokenizer from_json(std::string_view tokenizer_json, std::string_view config_json,
                             const std::string& source);

  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // `text` is UTF-8; ill-formed sequences are each replaced by U+FFFD first (the WHATWG decoder's
  // rule, as Python's errors="replace" and Rust's from_utf8_lossy do).
  std::vector<int64_t> encode(std::string_view text, const EncodeOptions& options = {}) const;
  std::vector<std::vector<int64_t>> encode_batch(const std::vector<std::string>& texts,
                                                 const EncodeOptions& options = {}) const;
  // Bytes that do not form UTF-8 (a split multi-byte token) come out as U+FFFD. An id outside the
  // vocabulary is an error naming it.
  std::string decode(const std::vector<int64_t>& ids, const DecodeOptions& options = {}) const;

  int64_t vocab_size() const;  // model vocabulary and added tokens: one past the largest id
  std::optional<int64_t> token_to_id(std::string_view token) const;
  std::string id_to_token(int64_t id) const;
  bool is_special(int64_t id) const;
  // The ids add_special_tokens puts before a text (the BOS of most models; empty for many).
  const std::vector<int64_t>& special_prefix() const;
  std::optional<int64_t> bos_id() const;  // tokenizer_config's bos_token / eos_token
  std::optional<int64_t> eos_id() const;

  bool has_chat_template() const;
  // This tokenizer as llama.cpp's vocabulary, its tokens padded with unused ones to `vocab_size` (a
  // model's rows); an error naming what llama.cpp lacks for a tokenizer other than a byte-level BPE
  // with Llama 3's, Qwen 2's or GPT-2's pre-tokenizer and no normalizer but NFC.
  GgufVocabulary gguf_vocabulary(int64_t vocab_size) const;
  // `messages_json` is a JSON array of messages ({"role": "user", "content": "..."}, and whatever else
  // the template reads: tool_calls, reasoning_content, ...), rendered by the chat template as
  // transformers renders it (Jinja2 with trim_blocks and lstrip_blocks; bos_token, eos_token and the
  // other special tokens of tokenizer_config.json defined). A template that refuses the conversation
  // (raise_exception) or uses Jinja that Dew does not implement is an error naming it and the line.
  ChatPrompt apply_chat_template(std::string_view messages_json, const ChatOptions& options = {}) const;

 private:
  struct State;
  explicit Tokenizer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// Generated ids to text as it becomes final, for streaming: text is held back while it ends in an
// incomplete UTF-8 character or could be the start of a stop string. A stop string is matched on the
// decoded text, across token boundaries; the text before it is the last returned.
class TextStream {
 public:
  TextStream(const Tokenizer& tokenizer, std::vector<std::string> stop_strings, DecodeOptions options = {});
  std::string push(int64_t id);  // the text that became final with this id (often empty)
  std::string finish();          // what was held back (nothing once stopped)
  bool stopped() const { return stopped_; }
  const std::vector<int64_t>& ids() const { return ids_; }

 private:
  const Tokenizer& tokenizer_;
  std::vector<std::string> stops_;
  DecodeOptions options_;
  std::vector<int64_t> ids_;
  std::string text_;    // decode(ids_)
  size_t emitted_ = 0;  // bytes of text_ already returned
  bool stopped_ = false;
};

struct BpeTrainOptions {
  int64_t vocab_size = 8192;                // bytes (256) + merges + special tokens
  int64_t min_frequency = 2;                // a pair seen fewer times than this is never merged
  std::vector<std::string> special_tokens;  // added after the merges, special, never split
};

// Learns a byte-level BPE (Llama 3's pre-tokenizer pattern, GPT-2's byte alphabet) from `documents`
// and returns its tokenizer.json, which Tokenizer::load and the Hugging Face tokenizers read. The
// most frequent pair is merged first; ties go to the pair of smaller ids, so training is
// deterministic.
std::string train_byte_level_bpe(const std::vector<std::string_view>& documents,
                                 const BpeTrainOptions& options);

}  // namespace dew
