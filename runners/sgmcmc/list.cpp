// `sgmcmc list` and `sgmcmc presets`.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.hpp"
#include "presets.hpp"

import sgmcmc;

namespace {

template <class Catalogue>
void print_catalogue(const char* title, const Catalogue& catalogue) {
  fmt::print("\n{}:\n", title);
  for (const auto& entry : catalogue) fmt::print("  {:<12} {}\n", entry.name, entry.description);
}

/// The keys the entries document (their field tables), each once: default, constraint, the
/// entries that read it, doc. runners/README.md shows the same table, which a test holds to this.
template <class Catalogue>
void print_keys(const char* section, const Catalogue& catalogue) {
  const auto rows = sgmcmc::key_table(catalogue);
  if (rows.empty()) return;
  fmt::print("\n{} keys (besides name): key = default, constraint, read by: meaning\n", section);
  for (const auto& row : rows)
    fmt::print("  {:<20} = {}{}, {}: {}\n", row.key.key, row.key.default_value,
               row.key.constraint.empty() ? "" : fmt::format(" ({})", row.key.constraint),
               sgmcmc::used_by_text(row, catalogue), row.key.doc);
}

/// A section's keys from its field tables ([run]'s, [output]'s): default, constraint, doc.
void print_key_docs(const char* section, const std::vector<sgmcmc::KeyDoc>& keys) {
  fmt::print("\n{} keys: key = default, constraint: meaning\n", section);
  for (const auto& key : keys)
    fmt::print("  {:<20} = {}{}: {}\n", key.key, key.default_value, key.constraint.empty() ? "" : fmt::format(" ({})", key.constraint),
               key.doc);
}

/// Which combinations sample the posterior exactly, which are biased, which are refused and why
/// (the refusals are the catalogues' declared `mh_refusal`s, the same that make_corrector applies).
void print_combinations() {
  fmt::print("\ncombinations:\n"
             "  corrector none: every estimator with every integrator; biased: the bias shrinks with the step size\n"
             "    (and with the gradient noise), but is never 0; psgld's only once its preconditioner is frozen, so it\n"
             "    needs run.warmup > 0 (without Γ a changing preconditioner leaves a bias no step size removes)\n"
             "  corrector mh: exact, on models with 'exact-log-likelihood' and with a constant step size; refused "
             "after\n");
  const auto print_refusals = [](const char* kind, const auto& catalogue) {
    for (const auto& entry : catalogue)
      if (!entry.mh_refusal.empty()) fmt::print("    {} {:<10} {}\n", kind, entry.name, entry.mh_refusal);
  };
  print_refusals("estimator ", sgmcmc::estimator_catalogue());
  print_refusals("integrator", sgmcmc::integrator_catalogue());
}

}  // namespace

int list_command(const std::optional<std::filesystem::path>& plugin_dir) {
  const auto folders = plugin_folders(plugin_dir);
  std::vector<std::string> folder_names;
  for (const auto& folder : folders) folder_names.push_back(folder.string());
  fmt::print("models (searched: {}):\n", fmt::join(folder_names, ", "));
  for (const auto& listing : sgmcmc::discover_plugins(folders)) {
    if (!listing.plugin) {
      fmt::print("  {:<12} NOT LOADABLE: {}\n", listing.name, listing.error);
      continue;
    }
    const auto& info = listing.plugin->info();
    fmt::print("  {:<12} {}{}\n", info.name, info.description, listing.shadowed ? " [shadowed by an earlier folder]" : "");
    fmt::print("  {:<12} parameters: {}\n", "", info.parameters);
    fmt::print("  {:<12} capabilities: {}\n", "", fmt::join(sgmcmc::capability_names(info.capabilities), ", "));
    fmt::print("  {:<12} from: {}\n", "", listing.path.string());
  }
  print_catalogue("estimators", sgmcmc::estimator_catalogue());
  print_keys("estimator", sgmcmc::estimator_catalogue());
  print_catalogue("integrators", sgmcmc::integrator_catalogue());
  print_keys("integrator", sgmcmc::integrator_catalogue());
  print_catalogue("correctors", sgmcmc::corrector_catalogue());
  print_keys("corrector", sgmcmc::corrector_catalogue());
  print_key_docs("run", sgmcmc::run_key_docs());
  print_key_docs("output", sgmcmc::key_docs(sgmcmc::output_fields()));
  print_combinations();
  return 0;
}

int presets_command() {
  for (const auto& preset : embedded_presets()) fmt::print("{:<20} {}\n", preset.name, preset_description(preset));
  return 0;
}

std::vector<std::filesystem::path> plugin_folders(const std::optional<std::filesystem::path>& plugin_dir) {
  // A mistyped --plugin-dir would otherwise be searched in silence and the defaults used instead.
  if (plugin_dir && !std::filesystem::is_directory(*plugin_dir))
    throw sgmcmc::Error(fmt::format("--plugin-dir '{}': no such folder", plugin_dir->string()));
  // The install prefix is found from the executable: <prefix>/bin/sgmcmc → <prefix>/lib/sgmcmc/plugins.
  // The build tree's plugins are searched by the build tree's own binary only: an installed
  // sgmcmc would otherwise list every bundled model twice, the installed copy "shadowed".
  const auto executable = std::filesystem::read_symlink("/proc/self/exe");
  std::vector<std::filesystem::path> defaults;
  std::error_code not_there;
  if (std::filesystem::equivalent(executable.parent_path(), SGMCMC_BUILD_BIN_DIR, not_there))
    defaults.push_back(SGMCMC_BUILD_PLUGIN_DIR);
  defaults.push_back(executable.parent_path().parent_path() / SGMCMC_INSTALL_PLUGIN_DIR);
  return sgmcmc::plugin_search_path(plugin_dir, defaults);
}

Command add_list_command(CLI::App& app) {
  const auto plugin_dir = std::make_shared<std::optional<std::filesystem::path>>();
  auto* command = app.add_subcommand("list", "models found, estimators, integrators, correctors");
  command->footer("Example: sgmcmc list --plugin-dir build/release/plugins");
  add_plugin_dir_option(*command, *plugin_dir);
  return {command, [plugin_dir] { return list_command(*plugin_dir); }};
}

Command add_presets_command(CLI::App& app) {
  return {app.add_subcommand("presets", "presets with a one-line description"), presets_command};
}
