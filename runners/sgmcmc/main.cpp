// sgmcmc: run stochastic-gradient MCMC chains from presets or TOML files, with model plugins
// loaded at run time.
#include <cstdio>
#include <exception>
#include <vector>
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cluster.hpp"
#include "commands.hpp"

import sgmcmc;

int main(int argc, char** argv) {
  CLI::App app{"sgmcmc: stochastic-gradient MCMC with any model, estimator, integrator and corrector"};
  app.require_subcommand(1);
  // `sgmcmc --help` lists them in this order.
  std::vector<Command> commands;
  for (auto add : {add_run_command, add_sweep_command, add_plot_command, add_list_command, add_presets_command,
                   add_check_model_command, add_summary_command, add_zv_command, add_topics_command, add_new_model_command,
                   add_sbc_command, add_tune_command, add_gradient_variance_command})
    commands.push_back(add(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    // Under mpirun every rank parses the same arguments: rank 0 alone says what is wrong.
    if (launcher_rank() != 0) return error.get_exit_code() == 0 ? 0 : exit_bad_input;
    return app.exit(error) == 0 ? 0 : exit_bad_input;
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

int report_error(const std::exception& error, const std::string& where) {
  const bool bad_input = dynamic_cast<const sgmcmc::Error*>(&error) != nullptr;
  fmt::print(stderr, "sgmcmc: {}{}: {}\n", bad_input ? "error" : "internal error", where, error.what());
  std::fflush(stderr);
  return bad_input ? exit_bad_input : exit_internal_error;
}
