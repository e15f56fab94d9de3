// Post-processors (post_processor.h), reduced to the ids they add around one sequence.
#include "tokenize/post_processor.h"

#include "dew/error.h"
#include "io/json.h"
#include "tokenize/component.h"

namespace dew::tokenize {

SpecialTokenTemplate make_special_token_template(
    const nlohmann::json& spec, const std::function<std::optional<int64_t>(const std::string&)>& id_of,
    const std::string& source) {
  SpecialTokenTemplate result;
  if (spec.is_null()) return result;
  const ComponentKind kind =
      component_kind(spec, source, "post_processor");  // (clang 14 cannot capture a binding)
  const std::string &type = kind.type, &here = kind.where;
  if (type == "ByteLevel") return result;
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    // "cls": ["[CLS]", 101], "sep": ["[SEP]", 102]: [CLS] A [SEP].
    const auto token_id = [&](const char* key) {
      const auto& pair = json_member(spec, key, nlohmann::json::value_t::array, here);
      DEW_REQUIRE(pair.size() == 2 && pair[1].is_number_integer(), "{}: \"{}\" is {}; expected [token, id]",
                  here, key, pair.dump());
      return pair[1].get<int64_t>();
    };
    result.prefix = {token_id("cls")};
    result.suffix = {token_id("sep")};
    return result;
  }
  if (type == "Sequence") {
    for (const auto& step : json_member(spec, "processors", nlohmann::json::value_t::array, here)) {
      SpecialTokenTemplate inner = make_special_token_template(step, id_of, source);
      result.prefix.insert(result.prefix.begin(), inner.prefix.begin(), inner.prefix.end());
      result.suffix.insert(result.suffix.end(), inner.suffix.begin(), inner.suffix.end());
    }
    return result;
  }
  if (type == "TemplateProcessing") {
    const auto& specials =
        spec.contains("special_tokens") ? spec["special_tokens"] : nlohmann::json::object();
    bool seen_sequence = false;
    for (const auto& item : json_member(spec, "single", nlohmann::json::value_t::array, here)) {
      if (item.contains("Sequence")) {
        DEW_REQUIRE(!seen_sequence, "{}: \"single\" holds the sequence twice", here);
        seen_sequence = true;
        continue;
      }
      DEW_REQUIRE(item.contains("SpecialToken") && item["SpecialToken"].contains("id"),
                  "{}: the template item {} is neither {{\"Sequence\": ...}} nor {{\"SpecialToken\": ...}}",
                  here, item.dump());
      const std::string name = item["SpecialToken"]["id"].get<std::string>();
      std::vector<int64_t> ids;
      if (specials.contains(name) && specials[name].contains("ids")) {
        for (const auto& id : specials[name]["ids"]) {
          DEW_REQUIRE(id.is_number_integer(),
                      "{}: the special token \"{}\" has the id {}; expected an integer", here, name,
                      id.dump());
          ids.push_back(id.get<int64_t>());
        }
      } else {
        const auto id = id_of(name);
        DEW_REQUIRE(id.has_value(), "{}: the special token \"{}\" is not in the vocabulary", here, name);
        ids.push_back(*id);
      }
      auto& side = seen_sequence ? result.suffix : result.prefix;
      side.insert(side.end(), ids.begin(), ids.end());
    }
    DEW_REQUIRE(seen_sequence, "{}: \"single\" has no {{\"Sequence\": ...}} item", here);
    return result;
  }
  fail(
      "{}: not implemented by Dew (post-processor types: TemplateProcessing, "
      "BertProcessing, RobertaProcessing, ByteLevel, Sequence)",
      here);
}

}  // namespace dew::tokenize
