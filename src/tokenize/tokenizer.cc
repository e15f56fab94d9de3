// Tokenizer: tokenizer.json + tokenizer_config.json → the pipeline of the Rust tokenizers crate
// (added tokens → normalizer → added tokens flagged normalized → pre-tokenizer → BPE →
// post-processor), and back through the decoder.
#include "dew/tokenizer.h"

#include <filesystem>
#include <unordered_set>

#include "dew/error.h"
#include "io/files.h"
#include "io/json.h"
#include "tokenize/added_tokens.h"
#include "tokenize/bpe.h"
#include "tokenize/chat_template.h"
#include "tokenize/component.h"
#include "tokenize/decoders.h"
#include "tokenize/normalizers.h"
#include "tokenize/post_processor.h"
#include "tokenize/pre_tokenizers.h"
#include "tokenize/tokenizer_state.h"
#include "tokenize/utf8.h"

namespace dew {

using namespace tokenize;

namespace {

// transformers' " ." → "." ... (clean_up_tokenization_spaces).
std::string clean_up_tokenization(std::string text) {
  for (const auto& [from, to] : std::initializer_list<std::pair<const char*, const char*>>{{" .", "."},
                                                                                           {" ?", "?"},
                                                                                           {" !", "!"},
                                                                                           {" ,", ","},
                                                                                           {" ' ", "'"},
                                                                                           {" n't", "n't"},
                                                                                           {" 'm", "'m"},
                                                                                           {" 's", "'s"},
                                                                                           {" 've", "'ve"},
                                                                                           {" 're", "'re"}})
    text = replace_all(text, from, to);
  return text;
}

}  // namespace

Tokenizer::Tokenizer(std::unique_ptr<State> state) : state_(std::move(state)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::load(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path file = fs::is_directory(path) ? fs::path(path) / "tokenizer.json" : fs::path(path);
  DEW_REQUIRE(fs::is_regular_file(file),
              "[tokenizer] {}: no such file; expected a tokenizer.json or a directory "
              "holding one",
              file.string());
  const fs::path config = file.parent_path() / "tokenizer_config.json";
  Tokenizer tokenizer =
      from_json(read_text_file(file.string()),
                fs::is_regular_file(config) ? read_text_file(config.string()) : "", file.string());
  if (const fs::path jinja = file.parent_path() / "chat_template.jinja"; fs::is_regular_file(jinja))
    tokenizer.state_->chat.replace_with_file(read_text_file(jinja.string()), jinja.string());
  return tokenizer;
}

Tokenizer Tokenizer::from_json(std::string_view tokenizer_json, std::string_view config_json,
                               const std::string& source) {
  auto s = std::make_unique<State>();
  try {
    const nlohmann::json spec = parse_json(tokenizer_json, source);
    const nlohmann::json config = config_json.empty()
                                      ? nlohmann::json::object()
                                      : parse_json(config_json, source + " (tokenizer_config.json)");
    DEW_REQUIRE(spec.is_object(), "[tokenizer] {}: expected a JSON object", source);
    for (const char* unsupported : {"truncation", "padding"}) {
      DEW_REQUIRE(
          !spec.contains(unsupported) || spec[unsupported].is_null(),
          "[tokenizer] {}: \"{}\" is set; Dew encodes whole texts and pads batches itself (expected null)",
          source, unsupported);
    }
    const std::string where = "[tokenizer] " + source;
    s->normalizer_spec = spec.value("normalizer", nlohmann::json());
    s->pre_tokenizer_spec = spec.value("pre_tokenizer", nlohmann::json());
    s->normalizer = make_normalizer(s->normalizer_spec, where);
    s->pre_tokenizer = make_pre_tokenizer(s->pre_tokenizer_spec, where);
    s->model =
        std::make_unique<BpeModel>(json_member(spec, "model", nlohmann::json::value_t::object, where), where);
    s->decoder = make_decoder(spec.value("decoder", nlohmann::json()), where);
    s->tokens = s->model->tokens();

    std::vector<std::string> raw_contents, normalized_contents;
    const nlohmann::json added = spec.value("added_tokens", nlohmann::json::array());
    // As the model's ids (bpe.cc): the table is sized by the largest id, so ids far past the count are
    // refused.
    const int64_t id_limit =
        int64_t(s->tokens.size() + (added.is_array() ? added.size() : 0)) + kVocabularyIdSlack;
    for (const auto& entry : added) {
      const JsonFields f{entry, where + " added_tokens"};
      AddedToken token;
      token.content = json_member(entry, "content", nlohmann::json::value_t::string, where + " added_tokens")
                          .get<std::string>();
      token.id = json_member(entry, "id", nlohmann::json::value_t::number_integer, where + " added_tokens")
                     .get<int64_t>();
      DEW_REQUIRE(token.id >= 0 && token.id < id_limit,
                  "{} added_tokens: \"{}\" has id {}; expected an id below {} (the model's ids, the added "
                  "tokens and room for gaps)",
                  where, token.content, token.id, id_limit);
      token.single_word = f.flag_or("single_word", false);
      token.lstrip = f.flag_or("lstrip", false);
      token.rstrip = f.flag_or("rstrip", false);
      token.special = f.flag_or("special", false);
      token.normalized = f.flag_or("normalized", !token.special);
      if (size_t(token.id) >= s->tokens.size()) s->tokens.resize(size_t(token.id) + 1);
      s->tokens[size_t(token.id)] = token.content;
      s->added_ids[token.content] = token.id;
      s->added.push_back(token);
    }
    for (const AddedToken& token : s->added) {
      const bool normalized = token.normalized && s->normalizer;
      raw_contents.push_back(normalized ? std::string() : token.content);
      normalized_contents.push_back(normalized ? s->normalizer->normalize(token.content) : std::string());
    }
    s->raw_matcher = std::make_unique<AddedTokenMatcher>(s->added, raw_contents);
    s->normalized_matcher = std::make_unique<AddedTokenMatcher>(s->added, normalized_contents);
    s->special.assign(s->tokens.size(), false);
    for (const AddedToken& token : s->added) s->special[size_t(token.id)] = token.special;

    const auto id_of = [&state = *s](const std::string& token) { return state.id_of(token); };
    s->special_template =
        make_special_token_template(spec.value("post_processor", nlohmann::json()), id_of, where);
    // The ids a post-processor adds are given by number: each must be one of the vocabulary's, or
    // encode would hand a model an id it has no row for.
    for (const auto* side : {&s->special_template.prefix, &s->special_template.suffix})
      for (const int64_t id : *side)
        DEW_REQUIRE(
            id >= 0 && id < int64_t(s->tokens.size()) &&
                (!s->tokens[size_t(id)].empty() || s->special[size_t(id)]),
            "{} post_processor: it adds id {}, which is not in the vocabulary ({} ids); expected the id of "
            "a token",
            where, id, s->tokens.size());
    const JsonFields c{config, where + " tokenizer_config.json"};
    if (auto bos = config_token(config, "bos_token")) s->bos = s->id_of(*bos);
    if (auto eos = config_token(config, "eos_token")) s->eos = s->id_of(*eos);
    // NOTE [add_bos_token]: transformers (LlamaTokenizerFast and its kin) rebuild the post-processor
    // from tokenizer_config's add_bos_token / add_eos_token when the file sets them: BOS? A EOS?.
    if (c.has("add_bos_token") || c.has("add_eos_token")) {
      SpecialTokenTemplate t;
      if (c.flag_or("add_bos_token", false)) {
        DEW_REQUIRE(s->bos.has_value(),
                    "{} tokenizer_config.json: add_bos_token is true but bos_token names no token", where);
        t.prefix = {*s->bos};
      }
      if (c.flag_or("add_eos_token", false)) {
        DEW_REQUIRE(s->eos.has_value(),
                    "{} tokenizer_config.json: add_eos_token is true but eos_token names no token", where);
        t.suffix = {*s->eos};
      }
      s->special_template = t;
    }
    s->clean_up_spaces = c.flag_or("clean_up_tokenization_spaces", false);
    s->chat = ChatTemplates(config, source);
  } catch (const nlohmann::json::exception& e) {
    fail("[tokenizer] {}: a field has the wrong type ({})", source, e.what());
  }
  return Tokenizer(std::move(s));
}

std::vector<int64_t> Tokenizer::encode(std::string_view input, const EncodeOptions& options) const {
  const State& s = *state_;
  const std::string text = make_valid_utf8(input);
  std::vector<int64_t> ids;
  std::vector<std::string> pieces;
  for (const Section& section : s.raw_matcher->split(text)) {
    if (section.id >= 0) {
      ids.push_back(section.id);
      continue;
    }
    const std::string normalized =
        s.normalizer ? s.normalizer->normalize(section.text) : std::string(section.text);
    for (const Section& part : s.normalized_matcher->split(normalized)) {
      if (part.id >= 0) {
        ids.push_back(part.id);
        continue;
      }
      pieces.assign(1, std::string(part.text));
      if (s.pre_tokenizer) s.pre_tokenizer->split(pieces, section.offset == 0 && part.offset == 0);
      for (const std::string& piece : pieces) s.model->encode(piece, ids);
    }
  }
  if (options.add_special_tokens) {
    // NOTE [no doubled BOS]: a text that already begins with the template's leading special tokens
    // (a prompt decoded with its BOS and encoded again) does not get them a second time — unlike
    // transformers, where "<s><s>" silently changes what the model sees.
    const auto& prefix = s.special_template.prefix;
    const bool has_prefix =
        ids.size() >= prefix.size() && std::equal(prefix.begin(), prefix.end(), ids.begin());
    if (!has_prefix) ids.insert(ids.begin(), prefix.begin(), prefix.end());
    ids.insert(ids.end(), s.special_template.suffix.begin(), s.special_template.suffix.end());
  }
  return ids;
}

std::vector<std::vector<int64_t>> Tokenizer::encode_batch(const std::vector<std::string>& texts,
                                                          const EncodeOptions& options) const {
  std::vector<std::vector<int64_t>> out;
  out.reserve(texts.size());
  for (const std::string& text : texts) out.push_back(encode(text, options));
  return out;
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids, const DecodeOptions& options) const {
  const State& s = *state_;
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int64_t id : ids) {
    DEW_REQUIRE(
        id >= 0 && size_t(id) < s.tokens.size() && (!s.tokens[size_t(id)].empty() || s.special[size_t(id)]),
        "[tokenizer] decode: id {} is not in the vocabulary (ids 0..{})", id, s.tokens.size() - 1);
    if (options.skip_special_tokens && s.special[size_t(id)]) continue;
    tokens.push_back(s.tokens[size_t(id)]);
  }
  if (s.decoder) s.decoder->decode(tokens);
  std::string text;
  for (const std::string& token : tokens) text += token;
  if (options.clean_up_tokenization_spaces.value_or(s.clean_up_spaces))
    text = clean_up_tokenization(std::move(text));
  return text;
}

int64_t Tokenizer::vocab_size() const {
  return static_cast<int64_t>(state_->tokens.size());
}

std::optional<int64_t> Tokenizer::token_to_id(std::string_view token) const {
  return state_->id_of(token);
}

std::string Tokenizer::id_to_token(int64_t id) const {
  DEW_REQUIRE(id >= 0 && id < vocab_size(), "[tokenizer] id {} is not in the vocabulary (ids 0..{})", id,
              vocab_size() - 1);
  return state_->tokens[size_t(id)];
}

bool Tokenizer::is_special(int64_t id) const {
  return id >= 0 && id < vocab_size() && state_->special[size_t(id)];
}

const std::vector<int64_t>& Tokenizer::special_prefix() const {
  return state_->special_template.prefix;
}

std::optional<int64_t> Tokenizer::bos_id() const {
  return state_->bos;
}
std::optional<int64_t> Tokenizer::eos_id() const {
  return state_->eos;
}

bool Tokenizer::has_chat_template() const {
  return !state_->chat.empty();
}

ChatPrompt Tokenizer::apply_chat_template(std::string_view messages_json, const ChatOptions& options) const {
  return state_->chat.render(messages_json, options);
}

}  // namespace dew
