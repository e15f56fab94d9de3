// `dew ops`: the support matrix, printed from the registry's data (the same data as docs/ops.md).
#include "cli/commands.h"
#include "gate/catalog.h"

namespace dew::cli {
namespace {

int run_ops(bool markdown) {
  if (markdown) {
    fmt::print("# Operations\n\nPrinted by `dew ops --markdown` from the registry; do not edit by hand.\n\n");
    fmt::print("| op | implementation | requirements | cases |\n|---|---|---|---|\n");
  }
  for (const auto& e : gate::catalog()) {
    std::vector<std::string> cases;
    for (const auto& c : e.cases) cases.push_back(c.name);
    for (const auto& impl : e.implementations) {
      std::string reqs = fmt::format("{}", fmt::join(impl.requirements, "; "));
      if (markdown)
        fmt::print("| {} | {} | {} | {} |\n", e.name, impl.name, reqs, fmt::join(cases, ", "));
      else
        fmt::print("{:<14} {:<14} {}\n", e.name, impl.name, reqs);
    }
  }
  return 0;
}

}  // namespace

void add_ops(CLI::App& app, int& status) {
  auto markdown = std::make_shared<bool>(false);
  auto* ops_cmd = app.add_subcommand("ops", "print the support matrix: ops x implementations x requirements");
  ops_cmd->add_flag("--markdown", *markdown, "as the Markdown of docs/ops.md");
  ops_cmd->callback([markdown, &status] { status = run_ops(*markdown); });
}

}  // namespace dew::cli
