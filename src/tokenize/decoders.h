// tokenizer.json's "decoder": tokens back to text. ByteLevel, Metaspace, Replace, ByteFallback, Fuse,
// Strip and Sequence, each a step over the list of token strings; other types are refused by name.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace dew::tokenize {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode(std::vector<std::string>& tokens) const = 0;
};

// nullptr for a null spec: the tokens are joined as they are.
std::unique_ptr<Decoder> make_decoder(const nlohmann::json& spec, const std::string& source);

}  // namespace dew::tokenize
