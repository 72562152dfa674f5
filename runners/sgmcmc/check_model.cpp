// `sgmcmc check-model`: loads a plugin (refused with the reason if its ABI record differs) and
// prints one PASS/FAIL/SKIP line per check of sgmcmc::check_model.
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.hpp"

import sgmcmc;

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
  const auto outcomes = sgmcmc::check_model(
      [&](const sgmcmc::Settings& settings, std::uint64_t seed) { return plugin.create({settings, seed}); }, config["model"]);
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
  command->add_option("--plugin-dir", check->plugin_dir, "search this folder for model plugins first");
  return {command, [check] { return check_model_command(check->plugin, check->overrides, check->plugin_dir); }};
}
