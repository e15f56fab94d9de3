// dew launch -n N [--hostfile F] -- COMMAND...: runs `dew COMMAND...` as N ranks through Open MPI's
// mpirun, for users who do not know mpirun's options (docs/parallel.md). It only builds mpirun's command
// line and becomes mpirun (exec), so signals and the exit status are mpirun's own.
#include <dew/error.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include "cli/commands.h"

namespace dew::cli {
namespace {

struct LaunchOptions {
  int ranks = 1;
  std::string hostfile;
  std::vector<std::string> command;
  bool dry_run = false;
};

std::string this_executable() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string("dew") : self.string();
}

int run_launch(const LaunchOptions& o) {
  DEW_REQUIRE(o.ranks >= 1, "[launch] -n {}; expected at least one rank", o.ranks);
  DEW_REQUIRE(!o.command.empty(),
              "[launch] no command; expected one after --, e.g. dew launch -n 2 -- train "
              "run.toml");
  std::vector<std::string> args = {"mpirun", "-n", std::to_string(o.ranks)};
  if (::geteuid() == 0) args.push_back("--allow-run-as-root");  // containers and CI run as root
  // Dew's threads, not mpirun's binding, place the work: each rank's threads may use any core.
  args.insert(args.end(), {"--bind-to", "none"});
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  if (o.hostfile.empty()) {
    if (o.ranks > cores) args.push_back("--oversubscribe");
    // Each rank's share of this machine's cores for oneDNN's OpenMP threads (Dew's own threads divide
    // the cores by the local rank count themselves); read when OpenMP starts, so set here.
    if (!std::getenv("OMP_NUM_THREADS"))
      args.insert(args.end(), {"-x", fmt::format("OMP_NUM_THREADS={}", std::max(1, cores / o.ranks))});
  } else {
    DEW_REQUIRE(std::filesystem::is_regular_file(o.hostfile),
                "[launch] --hostfile {} does not exist; expected Open MPI's hostfile (a line per host: "
                "`name slots=N`)",
                o.hostfile);
    args.insert(args.end(), {"--hostfile", o.hostfile});
  }
  args.push_back(this_executable());
  args.insert(args.end(), o.command.begin(), o.command.end());
  if (o.dry_run) {
    fmt::print("{}\n", fmt::join(args, " "));
    return 0;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execvp("mpirun", argv.data());  // returns only when it could not start
  DEW_REQUIRE(errno != ENOENT,
              "[launch] mpirun is not on PATH; install Open MPI (openmpi-bin, tools/setup-debian.sh), or "
              "start the ranks with your cluster's launcher");
  fail("[launch] could not start mpirun: {}", std::strerror(errno));
}

}  // namespace

void add_launch(CLI::App& app, int& status) {
  auto* cmd = app.add_subcommand(
      "launch",
      "run a dew command as N data-parallel ranks through mpirun: dew launch -n 2 -- train run.toml");
  LaunchOptions& o = runs(cmd, status, run_launch);
  cmd->add_option("-n,--ranks", o.ranks, "processes to start")->required();
  cmd->add_option("--hostfile", o.hostfile, "Open MPI's hostfile, for ranks on several machines");
  cmd->add_flag("--dry-run", o.dry_run, "print the mpirun command instead of running it");
  cmd->add_option("command", o.command, "the dew command each rank runs, after --")->required();
}

}  // namespace dew::cli
