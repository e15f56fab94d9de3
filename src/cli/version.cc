// `dew --version`: what this build is and what it found, from the same description run.json records.
#include <fmt/format.h>

#include <cctype>

#include "cli/commands.h"
#include "train/environment.h"

namespace dew::cli {

std::string version_text() {
  const nlohmann::json env = train::environment_description();
  const nlohmann::json& libraries = env["libraries"];
  const nlohmann::json& machine = env["machine"];
  std::vector<std::string> found;
  for (const auto& [name, version] : libraries.items())
    if (name != "dew" && name != "commit" && name != "build_type" && name != "compiler" &&
        name != "cuda_backend")
      found.push_back(fmt::format("{} {}", name, version.get<std::string>()));
  std::string compiler = libraries["compiler"].get<std::string>();
  if (!compiler.empty() && std::isdigit(static_cast<unsigned char>(compiler[0])))
    compiler = "g++ " + compiler;
  std::vector<std::string> sets = machine["instruction_sets"].get<std::vector<std::string>>();
  return fmt::format(
      "dew {} (commit {}, {} build)\ncompiler: {}\nCPU: {}; instruction sets: {}\nCUDA backend: {} ({} "
      "devices)\n"
      "MPI: not built\nlibraries: {}",
      libraries["dew"].get<std::string>(), libraries["commit"].get<std::string>(),
      libraries["build_type"].get<std::string>(), compiler, machine["cpu"].get<std::string>(),
      sets.empty() ? "baseline x86-64" : fmt::format("{}", fmt::join(sets, " ")),
      libraries["cuda_backend"].get<std::string>(), machine["cuda_devices"].get<int>(),
      fmt::join(found, ", "));
}

}  // namespace dew::cli
