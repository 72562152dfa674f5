// The configuration a command starts from (configuration.hpp).
#include <map>
#include <string>
#include <variant>
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "configuration.hpp"
#include "files.hpp"
#include "presets.hpp"

namespace fs = std::filesystem;

bool names_a_file(const std::string& section, const std::string& key) {
  if (section == "model") return key == "data" || key == "test_data" || key.ends_with("_file");
  return section == "run" && key == "init";
}

void resolve_file_names(sgmcmc::RunConfig& config, const fs::path& folder) {
  for (auto& [section, settings] : config.sections)
    for (const auto& [key, entry] : std::map(settings.entries())) {
      const auto* name = std::get_if<std::string>(&entry.value);
      if (!names_a_file(section, key) || !name || name->empty() || fs::path(*name).is_absolute()) continue;
      settings.set(key, {(folder / *name).lexically_normal().string(), entry.origin});
    }
}

std::string model_name(sgmcmc::SectionReader model) { return model.text("name", ""); }

void resolve_preset_data_files(sgmcmc::RunConfig& config, const std::function<fs::path()>& plugin_file) {
  std::optional<fs::path> folder;
  for (auto& [section, settings] : config.sections)
    for (const auto& [key, entry] : std::map(settings.entries())) {
      const auto* name = std::get_if<std::string>(&entry.value);
      const bool from_preset = entry.origin.starts_with(preset_folder);
      if (!from_preset || !names_a_file(section, key) || !name || name->empty() || fs::path(*name).is_absolute()) continue;
      if (!folder) folder = plugin_file().parent_path() / "data" / model_name(sgmcmc::SectionReader(config["model"]));
      settings.set(key, {(*folder / *name).lexically_normal().string(), entry.origin});
    }
}

LoadedConfig load_config(const ConfigurationSource& source) {
  const auto& [preset, file, overrides] = source;
  LoadedConfig loaded;
  if (preset) {
    const auto& found = find_preset(*preset);
    loaded = {sgmcmc::parse_config(found.text, found.source), found.name, fmt::format("preset {}", found.name)};
  } else {
    loaded = {sgmcmc::parse_config(read_file(*file, "the configuration file"), file->string()), file->stem().string(),
              file->string()};
    resolve_file_names(loaded.config, file->parent_path());
  }
  for (const auto& assignment : overrides) sgmcmc::apply_override(loaded.config, assignment);
  return loaded;
}

void add_configuration_options(CLI::App& command, ConfigurationSource& source) {
  auto* preset_option = command.add_option("--preset", source.preset, "a preset (see `sgmcmc presets`)");
  command.add_option("--config", source.config_file, "a TOML configuration file")->excludes(preset_option);
  command.add_option("--set", source.overrides, "override a key: section.key=value (repeatable)");
}

void require_configuration(const ConfigurationSource& source, const std::string& command) {
  if (!source.preset && !source.config_file) throw sgmcmc::Error(command + ": give --preset NAME or --config FILE");
}
