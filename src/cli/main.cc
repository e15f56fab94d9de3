// The dew command: a thin layer over the library. Each command adds itself (commands.h). Exit codes: 0
// success, 1 user error (dew::Error, message on stderr), 2 usage error.
#include <dew/error.h>
#include <dew/parallel.h>

#include "cli/commands.h"
#include "core/nearest_name.h"

#include <exception>
#include <new>

// libdew_openmp_passive.so (src/openmp_passive), which sets OpenMP's wait policy before libgomp reads it.
extern "C" void dew_openmp_passive();

namespace {

// The deepest subcommand the line chose: where an unexpected argument belongs.
const CLI::App* chosen_command(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands())
    if (sub->parsed()) return chosen_command(*sub);
  return &app;
}

// The flag of `command` nearest to a mistyped `word`, or "" when none is near.
std::string nearest_option(const CLI::App& command, const std::string& word) {
  std::vector<std::string> flags;
  for (const CLI::Option* option : command.get_options()) {
    for (const std::string& name : option->get_lnames()) flags.push_back("--" + name);
    for (const std::string& name : option->get_snames()) flags.push_back("-" + name);
  }
  return dew::nearest_name(word, flags);
}

// An unknown flag with the nearest one the command has; otherwise CLI11's message.
int usage_error(const CLI::App& app, const CLI::ParseError& e) {
  const CLI::App* command = chosen_command(app);
  const std::string name = command == &app ? "dew" : "dew " + command->get_name();
  std::vector<std::string> commands;
  for (const CLI::App* sub : app.get_subcommands({})) commands.push_back(sub->get_name());
  std::string unknown;
  for (const std::string& arg : app.remaining(true)) {
    const bool flag = arg.rfind("-", 0) == 0;
    if (!flag && command != &app) continue;  // a command's positional arguments speak for themselves
    const std::string near = flag ? nearest_option(*command, arg) : dew::nearest_name(arg, commands);
    unknown += fmt::format("{}unknown {} {}{}", unknown.empty() ? "" : "; ", flag ? "option" : "command", arg,
                           near.empty() ? "" : fmt::format(" (did you mean {}?)", near));
  }
  fmt::print(stderr, "{}: {}\nRun `{} --help` for the options.\n", name, unknown.empty() ? e.what() : unknown,
             name);
  return 2;
}

}  // namespace

namespace {
// Exit status 1; as one of several ranks, the whole job ends now (the others would wait for this one).
int failed() {
  std::fflush(stderr);
  dew::parallel::abort_launched(1);
  return 1;
}
}  // namespace

int main(int argc, char** argv) {
  dew_openmp_passive();  // NOTE [OpenMP's idle threads]: keeps the library linked
  CLI::App app{"dew: train and serve language and diffusion models"};
  app.set_version_flag("--version", dew::cli::version_text, "print the version, build, CPU and libraries");
  app.require_subcommand(1);
  int status = 2;
  for (auto add : {dew::cli::add_train, dew::cli::add_generate, dew::cli::add_score, dew::cli::add_tokenize,
                   dew::cli::add_tokenizer, dew::cli::add_data, dew::cli::add_report, dew::cli::add_inspect,
                   dew::cli::add_export, dew::cli::add_check, dew::cli::add_ops, dew::cli::add_bench,
                   dew::cli::add_serve, dew::cli::add_sample, dew::cli::add_launch})
    add(app, status);
  try {
    app.parse(argc, argv);  // runs the chosen command's callback
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    return usage_error(app, e);
  } catch (const dew::Error& e) {
    fmt::print(stderr, "dew: {}\n", e.what());
    return failed();
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "dew: out of memory\n");
    return failed();
  } catch (const std::exception& e) {  // a defect, not bad input: said, not a crash
    fmt::print(stderr, "dew: internal error: {}\n", e.what());
    return failed();
  }
  return status;
}
