// dew::Error: the one exception type for failures reachable from user input. Its message names the
// input, what was wrong and what would be right; the CLI prints it and exits 1.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>
#include <string>

namespace dew {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// An allocation the memory limit or the system refused (runtime.h set_memory_limit): an Error that a
// caller such as the Trainer can tell apart, to say what to shrink.
class OutOfMemory : public Error {
 public:
  using Error::Error;
};

template <class... A>
[[noreturn]] void fail(fmt::format_string<A...> format, A&&... args) {
  throw Error(fmt::format(format, std::forward<A>(args)...));
}

}  // namespace dew

// DEW_REQUIRE(cond, "[op] argument 'x': expected ..., got {}", ...): throws dew::Error when cond is false.
#define DEW_REQUIRE(cond, ...)             \
  do {                                     \
    if (!(cond)) ::dew::fail(__VA_ARGS__); \
  } while (0)
