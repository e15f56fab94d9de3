// libFuzzer target for the TOML config reader: the input's first line is a --set override, the rest
// the config. Either both are read (and a few members read back by type), or a dew::Error says why.
#include <dew/error.h>

#include <string>
#include <string_view>

#include "io/toml.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const std::string override_line(input.substr(0, newline == std::string_view::npos ? 0 : newline));
  const std::string_view text = newline == std::string_view::npos ? input : input.substr(newline + 1);
  try {
    const toml::table root = dew::parse_toml(
        text, "fuzz.toml",
        override_line.empty() ? std::vector<std::string>{} : std::vector<std::string>{override_line});
    if (const toml::table* train = root["train"].as_table()) {
      const dew::TomlFields fields(*train, "fuzz.toml: train");
      (void)fields.integer_or("steps", 1);
      (void)fields.number_or("peak_lr", 1.0);
      (void)fields.text_or("precision", "auto");
    }
    return 0;
  } catch (const dew::Error&) {
    return 0;
  }
}
