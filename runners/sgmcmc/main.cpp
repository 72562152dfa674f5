// sgmcmc: run stochastic-gradient MCMC chains from presets or TOML files, with model plugins
// loaded at run time.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <vector>
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cluster.hpp"
#include "commands.hpp"

import sgmcmc;

namespace {

/// A first argument that is no subcommand (and no option) is named, with the closest subcommand:
/// CLI11 alone says "A subcommand is required".
void refuse_unknown_command(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return;
  std::vector<std::string> names;
  for (const auto* subcommand : app.get_subcommands({})) names.push_back(subcommand->get_name());
  if (std::find(names.begin(), names.end(), argv[1]) != names.end()) return;
  const auto suggestion = sgmcmc::closest_match(argv[1], names);
  throw sgmcmc::Error(fmt::format("unknown command '{}'{}; the commands are {}", argv[1],
                                  suggestion.empty() ? "" : fmt::format(" (did you mean '{}'?)", suggestion),
                                  fmt::join(names, ", ")));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"sgmcmc: stochastic-gradient MCMC with any model, estimator, integrator and corrector"};
  app.require_subcommand(1);
  // `sgmcmc --help` lists them in this order.
  std::vector<Command> commands;
  for (auto add : {add_run_command, add_sweep_command, add_plot_command, add_list_command, add_presets_command,
                   add_check_model_command, add_summary_command, add_zv_command, add_topics_command, add_new_model_command,
                   add_sbc_command, add_tune_command, add_gradient_variance_command, add_predict_command,
                   add_convert_command})
    commands.push_back(add(app));

  try {
    refuse_unknown_command(app, argc, argv);
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // Under mpirun every rank parses the same arguments: rank 0 alone says what is wrong.
    if (launcher_rank() != 0) return error.get_exit_code() == 0 ? 0 : exit_bad_input;
    if (error.get_exit_code() == 0) return app.exit(error);  // --help, --version
    // As every other input error: "sgmcmc: error:", then where the help is.
    fmt::print(stderr, "sgmcmc: error: {}\nRun with --help for more information.\n", error.what());
    return exit_bad_input;
  } catch (const sgmcmc::Error& error) {
    return report_error(error);
  }
  try {
    (void)sgmcmc::memory_budget_bytes();  // a malformed SGMCMC_MEMORY_LIMIT_MB is refused now, not at the first large allocation
    for (const auto& command : commands)
      if (command.subcommand->parsed()) return command.run();
  } catch (const std::exception& error) {
    return report_error(error);
  }
  return 0;
}

namespace {

/// Errors of the system rather than of sgmcmc, which are the user's input or machine, not a bug: a
/// path the file system refuses (too long, a loop of symbolic links, no permission; the message
/// names it), and a thread the system will not start (too many --threads or --jobs), for which the
/// returned hint is added to the message. None when `error` is neither.
std::optional<std::string> system_refusal(const std::exception& error) {
  if (dynamic_cast<const std::filesystem::filesystem_error*>(&error)) return "";
  const auto* system = dynamic_cast<const std::system_error*>(&error);
  if (system && system->code() == std::errc::resource_unavailable_try_again)
    return " (the system refused to start a thread: ask for fewer --threads or --jobs)";
  return std::nullopt;
}

}  // namespace

int report_error(const std::exception& error, const std::string& where) {
  const auto refusal = system_refusal(error);
  const bool bad_input = dynamic_cast<const sgmcmc::Error*>(&error) != nullptr || refusal;
  fmt::print(stderr, "sgmcmc: {}{}: {}{}\n", bad_input ? "error" : "internal error", where, error.what(),
             refusal.value_or(""));
  std::fflush(stderr);
  return bad_input ? exit_bad_input : exit_internal_error;
}
