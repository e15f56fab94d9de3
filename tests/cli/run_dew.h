// Runs the dew binary under test with `args` and returns its exit code and output (stderr merged).
#pragma once

#include <string>

#include "io/command.h"

namespace dew::testing {

// `prefix` goes before the binary (an `env ...` setting, say).
inline CommandResult run_dew(const std::string& args, const std::string& prefix = "") {
  return run_command(prefix + (prefix.empty() ? "" : " ") + DEW_BINARY + " " + args + " 2>&1");
}

}  // namespace dew::testing
