// `dew inspect PATH`: what a safetensors file or a checkpoint directory holds — per tensor its name,
// dtype, shape and bytes; per file its metadata; totals last. With --jsonl, one JSON object per
// tensor instead (the records a script reads).
#include <dew/safetensors.h>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/printable.h"

namespace dew::cli {
namespace {

int run_inspect(const std::string& path, bool jsonl) {
  const SafetensorsCheckpoint checkpoint = SafetensorsCheckpoint::open(path);
  uint64_t tensors = 0, bytes = 0, elements = 0;
  for (const SafetensorsFile& file : checkpoint.files()) {
    const SafetensorsHeader& h = file.header();
    if (!jsonl) {
      fmt::print("{}: {} tensors", file.path(), h.tensors.size());
      for (const auto& [k, v] : h.metadata) fmt::print(", {}={}", k, v);
      fmt::print("\n");
    }
    size_t name_width = 4;
    for (const auto& e : h.tensors) name_width = std::max(name_width, printable(e.name).size());
    for (const auto& e : h.tensors) {
      if (jsonl) {
        nlohmann::json record = {{"file", file.path()}, {"name", e.name},
                                 {"dtype", e.dtype},    {"shape", e.shape},
                                 {"bytes", e.nbytes()}, {"offset", h.data_start + e.begin}};
        fmt::print("{}\n", record.dump());
      } else {
        fmt::print("  {:<{}}  {:<7}  {:<20}  {:>14}\n", printable(e.name), name_width, e.dtype,
                   shape_str(e.shape), e.nbytes());
      }
      tensors += 1;
      bytes += e.nbytes();
      elements += uint64_t(numel_of(e.shape));
    }
  }
  if (!jsonl)
    fmt::print("total: {} tensors in {} file{}, {} elements, {} bytes\n", tensors, checkpoint.files().size(),
               checkpoint.files().size() == 1 ? "" : "s", elements, bytes);
  return 0;
}

}  // namespace

void add_inspect(CLI::App& app, int& status) {
  struct Options {
    std::string path;
    bool jsonl = false;
  };
  auto options = std::make_shared<Options>();
  auto* inspect_cmd = app.add_subcommand(
      "inspect", "what a safetensors file or checkpoint directory holds: tensors, dtypes, shapes");
  inspect_cmd
      ->add_option("path", options->path,
                   "a .safetensors file, or a directory with model.safetensors[.index.json]")
      ->required();
  inspect_cmd->add_flag("--jsonl", options->jsonl, "one JSON object per tensor instead of the table");
  inspect_cmd->callback([options, &status] { status = run_inspect(options->path, options->jsonl); });
}

}  // namespace dew::cli
