// Running another program (the dew binary, Node for tokenizers.js, Python for PyTorch) and taking its
// standard output: for the benchmarks and the tests that compare against an independent program.
#pragma once

#include <string>

namespace dew {

struct CommandResult {
  int exit_code = -1;  // -1 when the shell could not be started or the program did not exit
  std::string out;     // what it wrote to stdout (add 2>&1 to the command for stderr too)
};

// `command` through /bin/sh.
CommandResult run_command(const std::string& command);

}  // namespace dew
