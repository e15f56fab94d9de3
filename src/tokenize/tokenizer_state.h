// What a loaded Tokenizer holds (tokenizer.cc builds it): shared by the files that implement the
// Tokenizer's members, never by its users.
#pragma once

#include <nlohmann/json.hpp>

#include "dew/tokenizer.h"
#include "tokenize/added_tokens.h"
#include "tokenize/bpe.h"
#include "tokenize/chat_template.h"
#include "tokenize/decoders.h"
#include "tokenize/normalizers.h"
#include "tokenize/post_processor.h"
#include "tokenize/pre_tokenizers.h"

namespace dew {

struct Tokenizer::State {
  std::unique_ptr<tokenize::Normalizer> normalizer;
  std::unique_ptr<tokenize::PreTokenizer> pre_tokenizer;
  std::unique_ptr<tokenize::BpeModel> model;
  std::unique_ptr<tokenize::Decoder> decoder;
  nlohmann::json normalizer_spec, pre_tokenizer_spec;  // as the file gave them (gguf_vocabulary.cc)
  std::vector<tokenize::AddedToken> added;
  std::unique_ptr<tokenize::AddedTokenMatcher> raw_matcher, normalized_matcher;
  tokenize::SpecialTokenTemplate special_template;
  std::vector<std::string> tokens;  // by id: the model's vocabulary, then the added tokens
  std::vector<bool> special;        // by id
  tokenize::TokenIds added_ids;     // added token content → id
  std::optional<int64_t> bos, eos;
  bool clean_up_spaces = false;
  tokenize::ChatTemplates chat;

  std::optional<int64_t> id_of(std::string_view token) const {
    if (auto it = added_ids.find(token); it != added_ids.end()) return it->second;
    if (auto it = model->vocab().find(token); it != model->vocab().end()) return it->second;
    return std::nullopt;
  }
};

}  // namespace dew
