// `dew --version`: what this build is and what it found, from the same description run.json records.
#include <dew/parallel.h>
#include <fmt/format.h>

#include <cctype>

#include "cli/commands.h"
#include "train/environment.h"

namespace dew::cli {

std::string version_text() {
  const nlohmann::json env = train::environment_description();
  const nlohmann::json &build = env["build"], &machine = env["machine"];
  std::vector<std::string> libraries;
  for (const auto& [name, version] : env["libraries"].items())
    libraries.push_back(fmt::format("{} {}", name, version.get<std::string>()));
  std::string compiler = build["compiler"].get<std::string>();
  if (!compiler.empty() && std::isdigit(static_cast<unsigned char>(compiler[0])))
    compiler = "g++ " + compiler;
  const std::vector<std::string> sets = machine["instruction_sets"].get<std::vector<std::string>>();
  return fmt::format(
      "dew {} (commit {}, {} build)\ncompiler: {}\nCPU: {}; instruction sets: {}\nCUDA backend: {} ({} "
      "devices)\n"
      "MPI: {}\nlibraries: {}",
      build["dew"].get<std::string>(), build["commit"].get<std::string>(),
      build["build_type"].get<std::string>(), compiler, machine["cpu"].get<std::string>(),
      sets.empty() ? "baseline x86-64" : fmt::format("{}", fmt::join(sets, " ")),
      build["cuda_backend"].get<std::string>(), machine["cuda_devices"].get<int>(),
      parallel::built_with_mpi() ? "built (Open MPI; ranks by mpirun or dew launch)" : "not built (DEW_MPI)",
      fmt::join(libraries, ", "));
}

}  // namespace dew::cli
