// `sgmcmc check-model`: loads a plugin (refused with the reason if its ABI record differs) and
// prints one PASS/FAIL/SKIP line per check of sgmcmc::check_model, run in a child process: a
// plugin's bug can crash any process it is loaded into, and a crash must be a FAIL line naming the
// stage it ended, not the end of the command.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"

import sgmcmc;

namespace {

/// The plugin's PluginInfo (what `sgmcmc list` advertises, and what the runner plans with before a
/// model exists) against the built model's capabilities(): every capability declared must be the
/// model's. A model may have more for some settings (glm's Lipschitz bounds, for bounded families).
sgmcmc::CheckOutcome declared_capabilities_check(const sgmcmc::Capabilities& declared,
                                                 const std::optional<sgmcmc::Capabilities>& built) {
  const std::string name = "the capabilities in PluginInfo are the model's";
  if (!built) return {name, sgmcmc::CheckOutcome::Status::skipped, "the model did not build"};
  const auto listed = sgmcmc::capability_names(declared), actual = sgmcmc::capability_names(*built);
  std::vector<std::string> missing, added;
  for (const auto& capability : listed)
    if (std::ranges::find(actual, capability) == actual.end()) missing.push_back(capability);
  for (const auto& capability : actual)
    if (std::ranges::find(listed, capability) == listed.end()) added.push_back(capability);
  const std::string extra = added.empty() ? "" : fmt::format("capabilities() adds [{}] for these settings", fmt::join(added, ", "));
  if (missing.empty()) return {name, sgmcmc::CheckOutcome::Status::passed, extra};
  return {name, sgmcmc::CheckOutcome::Status::failed,
          fmt::format("PluginInfo declares [{}], which capabilities() does not return (it returns [{}])", fmt::join(missing, ", "),
                      fmt::join(actual, ", "))};
}

/// The child's messages to its parent, one JSON object a line: {"stage": s} before stage s,
/// {"status": ..., "name": ..., "detail": ...} for each outcome, {"done": true} at the end.
void send(int fd, const nlohmann::json& message) {
  const std::string line = message.dump() + "\n";
  for (std::size_t sent = 0; sent < line.size();) {
    const ssize_t n = ::write(fd, line.data() + sent, line.size() - sent);
    if (n <= 0) return;  // the parent went away: nothing left to tell
    sent += static_cast<std::size_t>(n);
  }
}

/// How a child that did not say it was done ended.
std::string how_it_ended(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  if (WIFEXITED(status)) return fmt::format("exit code {}", WEXITSTATUS(status));
  return "an unknown cause";
}

/// sgmcmc::check_model in child processes: a child that dies in stage s (a crash in the plugin's
/// code) becomes a FAIL outcome for that stage, and a new child continues at stage s + 1.
std::vector<sgmcmc::CheckOutcome> checks_in_child_processes(const sgmcmc::LoadedPlugin& plugin, const sgmcmc::Settings& settings) {
  std::optional<sgmcmc::Capabilities> built;  // in the child: the first model's
  const sgmcmc::ModelBuilder build = [&](sgmcmc::SectionReader given, std::uint64_t seed) {
    auto model = plugin.create({given, seed});
    if (!built) built = model->capabilities();
    return model;
  };
  std::vector<sgmcmc::CheckOutcome> outcomes;
  for (std::size_t first = 0; first < std::size(sgmcmc::check_stages);) {
    int channel[2];
    if (::pipe(channel) != 0) throw sgmcmc::Error(fmt::format("check-model: cannot make a pipe: {}", std::strerror(errno)));
    std::fflush(stdout);  // what the parent printed must not be printed again by the child
    const pid_t child = ::fork();
    if (child < 0) throw sgmcmc::Error(fmt::format("check-model: cannot start a child process: {}", std::strerror(errno)));
    if (child == 0) {
      ::close(channel[0]);
      const auto report = [&](const sgmcmc::CheckOutcome& outcome) {
        send(channel[1], {{"status", static_cast<int>(outcome.status)}, {"name", outcome.name}, {"detail", outcome.detail}});
      };
      const sgmcmc::CheckProgress progress{first, [&](std::size_t stage) { send(channel[1], {{"stage", stage}}); }, report};
      int code = 0;
      try {
        sgmcmc::check_model(build, settings, progress);
        report(declared_capabilities_check(plugin.info().capabilities, built));
        send(channel[1], {{"done", true}});
      } catch (...) {
        code = 3;
      }
      ::_exit(code);  // no exit handlers, no destructors of the parent's objects
    }
    ::close(channel[1]);
    std::string text;
    char buffer[4096];
    for (ssize_t n; (n = ::read(channel[0], buffer, sizeof buffer)) != 0;)
      if (n > 0) text.append(buffer, static_cast<std::size_t>(n));
      else if (errno != EINTR) break;
    ::close(channel[0]);
    int status = 0;
    while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {}
    std::size_t stage = first;
    bool done = false;
    for (std::size_t begin = 0, end; (end = text.find('\n', begin)) != std::string::npos; begin = end + 1) {
      const auto message = nlohmann::json::parse(text.substr(begin, end - begin));
      if (message.contains("stage")) stage = message["stage"];
      else if (message.contains("done")) done = true;
      else outcomes.push_back({message["name"], static_cast<sgmcmc::CheckOutcome::Status>(message["status"].get<int>()),
                               message["detail"]});
    }
    if (done) break;
    outcomes.push_back({sgmcmc::check_stages[stage], sgmcmc::CheckOutcome::Status::failed,
                        fmt::format("the check process ended with {} in this stage: the plugin crashed it",
                                    how_it_ended(status))});
    if (stage < 2) {  // no model, or dimensions not checked: nothing later can run
      outcomes.push_back(declared_capabilities_check({}, std::nullopt));
      break;
    }
    first = stage + 1;
  }
  return outcomes;
}

}  // namespace

int check_model_command(const std::string& plugin_name, const std::vector<std::string>& overrides,
                        const std::optional<std::filesystem::path>& plugin_dir) {
  const auto plugin = sgmcmc::load_plugin(plugin_name, plugin_folders(plugin_dir));
  auto config = sgmcmc::parse_config("", "check-model");
  for (const auto& assignment : overrides) {
    if (!assignment.starts_with("model."))
      throw sgmcmc::Error(fmt::format("--set {}: check-model takes [model] keys only (model.key=value)", assignment));
    sgmcmc::apply_override(config, assignment);
  }
  fmt::print("checking model plugin '{}' ({})\n", plugin.info().name, plugin.path().string());
  const auto outcomes = checks_in_child_processes(plugin, config["model"]);
  int failed = 0;
  for (const auto& outcome : outcomes) {
    constexpr const char* labels[] = {"PASS", "FAIL", "SKIP"};
    fmt::print("{}  {}{}\n", labels[static_cast<int>(outcome.status)], outcome.name,
               outcome.detail.empty() ? "" : " — " + outcome.detail);
    failed += outcome.status == sgmcmc::CheckOutcome::Status::failed;
  }
  fmt::print("{} checks, {} failed\n", outcomes.size(), failed);
  return failed ? 1 : 0;
}

Command add_check_model_command(CLI::App& app) {
  struct Options {
    std::string plugin;
    std::vector<std::string> overrides;
    std::optional<std::filesystem::path> plugin_dir;
  };
  const auto check = std::make_shared<Options>();
  auto* command = app.add_subcommand("check-model", "check a model plugin's gradients, batches and capabilities");
  command->footer("Example: sgmcmc check-model gaussian --set model.dim=3");
  command->add_option("plugin", check->plugin, "plugin name or path to its .so")->required();
  command->add_option("--set", check->overrides, "a [model] key: model.key=value (repeatable)");
  add_plugin_dir_option(*command, check->plugin_dir);
  return {command, [check] { return check_model_command(check->plugin, check->overrides, check->plugin_dir); }};
}
