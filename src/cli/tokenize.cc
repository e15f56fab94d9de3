// `dew tokenize --tokenizer PATH [--special] [--decode] [--skip-special]`: JSONL strings on stdin,
// one JSON array of ids per line on stdout; with --decode, arrays of ids in and strings out.
#include <dew/error.h>
#include <dew/tokenizer.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "io/json.h"

namespace dew::cli {

int run_tokenize(const TokenizeOptions& o) {
  const Tokenizer tokenizer = Tokenizer::load(o.tokenizer);
  std::string line;
  for (int64_t number = 1; std::getline(std::cin, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("stdin line {}", number);
    const nlohmann::json record = parse_json(line, where);
    if (!o.decode) {
      DEW_REQUIRE(record.is_string(), "{}: expected a JSON string (the text to encode), got {}", where,
                  json_type_name(record.type()));
      const nlohmann::json ids =
          tokenizer.encode(record.get<std::string>(), {.add_special_tokens = o.special});
      std::cout << ids.dump() << "\n";
      continue;
    }
    DEW_REQUIRE(record.is_array(), "{}: expected a JSON array of token ids, got {}", where,
                json_type_name(record.type()));
    std::vector<int64_t> ids;
    for (const auto& id : record) {
      DEW_REQUIRE(id.is_number_integer(), "{}: {} is not a token id; expected an integer", where, id.dump());
      ids.push_back(id.get<int64_t>());
    }
    const nlohmann::json text = tokenizer.decode(ids, {.skip_special_tokens = o.skip_special});
    std::cout << text.dump() << "\n";
  }
  std::cout << std::flush;
  return 0;
}

}  // namespace dew::cli
