// `sgmcmc check-model`: loads a plugin (refused with the reason if its ABI record differs) and
// prints one PASS/FAIL/SKIP line per check of sgmcmc::check_model.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

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
  std::optional<sgmcmc::Capabilities> built;
  auto outcomes = sgmcmc::check_model(
      [&](const sgmcmc::Settings& settings, std::uint64_t seed) {
        auto model = plugin.create({settings, seed});
        if (!built) built = model->capabilities();
        return model;
      },
      config["model"]);
  outcomes.push_back(declared_capabilities_check(plugin.info().capabilities, built));
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
