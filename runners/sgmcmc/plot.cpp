// `sgmcmc plot DIR [options]`: runs runners/figures/sweep_plot.py (python3 + matplotlib) on a
// sweep's output folder. The script is found beside the installed binary
// (<prefix>/share/sgmcmc/figures) or, for a binary of a build tree, in the source tree.
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>
#include <spawn.h>
#include <sys/wait.h>
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.hpp"

import sgmcmc;

extern char** environ;

namespace fs = std::filesystem;

namespace {

/// `name` beside the installed binary (<prefix>/share/sgmcmc/figures) or in the source tree.
fs::path find_figure_script(const std::string& name) {
  const auto executable = fs::read_symlink("/proc/self/exe");
  const std::vector<fs::path> candidates = {executable.parent_path().parent_path() / SGMCMC_INSTALL_FIGURES_DIR / name,
                                            fs::path(SGMCMC_SOURCE_FIGURES_DIR) / name};
  for (const auto& candidate : candidates)
    if (fs::is_regular_file(candidate)) return candidate;
  throw sgmcmc::Error(fmt::format("cannot find {}; looked in {} and {}", name, candidates[0].parent_path().string(),
                                  candidates[1].parent_path().string()));
}

/// SGMCMC_PYTHON if set (a virtual environment's python, say); else Debian's python3, which
/// third_party/setup.sh gives matplotlib, as the figure scripts' #! lines do; else python3 on PATH.
std::string python_interpreter() {
  if (const char* chosen = std::getenv("SGMCMC_PYTHON"); chosen && *chosen) return chosen;
  if (fs::exists("/usr/bin/python3")) return "/usr/bin/python3";
  return "python3";
}

}  // namespace

int run_figure_script(const std::string& name, const std::vector<std::string>& script_arguments) {
  const std::string python = python_interpreter();
  std::vector<std::string> arguments = {python, find_figure_script(name).string()};
  arguments.insert(arguments.end(), script_arguments.begin(), script_arguments.end());
  std::vector<char*> argv;
  for (auto& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);

  pid_t child = 0;
  if (const int error = posix_spawnp(&child, python.c_str(), nullptr, nullptr, argv.data(), environ); error != 0)
    throw sgmcmc::Error(fmt::format("cannot run '{}' ({}); it needs python3 with matplotlib "
                                    "(Debian: apt install python3-matplotlib), or SGMCMC_PYTHON naming such an interpreter",
                                    python, std::strerror(error)));
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  throw sgmcmc::Error(fmt::format("{} {} was killed by signal {}", python, name, WTERMSIG(status)));
}

int plot_command(const PlotOptions& options) {
  std::vector<std::string> arguments = {options.folder.string()};
  const auto add = [&](const char* flag, const std::string& value) {
    if (value.empty()) return;
    arguments.push_back(flag);
    arguments.push_back(value);
  };
  add("--panel", options.panel);
  add("--metric", options.metric);
  add("--seed-axis", options.seed_axis);
  add("--out", options.out.string());
  add("--name", options.name);
  try {
    return run_figure_script("sweep_plot.py", arguments);
  } catch (const sgmcmc::Error& error) {
    throw sgmcmc::Error(fmt::format("sgmcmc plot: {}", error.what()));
  }
}

Command add_plot_command(CLI::App& app) {
  const auto plot = std::make_shared<PlotOptions>();
  auto* command = app.add_subcommand("plot", "figures of a sweep: metric against seconds and item gradients, final values across seeds");
  command->footer("Example: sgmcmc plot runs/sweep-covtype-figure1 --panel model.subsample");
  command->add_option("folder", plot->folder, "a sweep's output folder")->required();
  command->add_option("--panel", plot->panel, "one panel per value of this axis (e.g. model.subsample)");
  command->add_option("--metric", plot->metric, "the metric to draw (default: the first)");
  command->add_option("--seed-axis", plot->seed_axis, "the axis box plots spread over (default: run.seed)");
  command->add_option("--out", plot->out, "where the PNGs go (default: the sweep's folder)");
  command->add_option("--name", plot->name, "the files' prefix (default: the sweep folder's name)");
  return {command, [plot] { return plot_command(*plot); }};
}
