// The configuration a command starts from: a preset or the user's TOML file, then the --set
// overrides, as `run`, `sbc` and `tune` take it.
#pragma once
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"

import sgmcmc;

namespace CLI {
class App;
}

struct LoadedConfig {
  sgmcmc::RunConfig config;
  std::string label;   // the preset's name or the file's stem: names the default output folder
  std::string source;  // "preset demo" or the file: where it came from, for the manifest
};

/// The preset or the file (exactly one is given), then each override. In a file, the keys that
/// name files (names_a_file) are read relative
/// to the file's folder when they are relative, as a file's own references are: `exp/a.toml`
/// with data = "d.csv" reads `exp/d.csv` from any working folder. Overrides are taken as given
/// (relative to the working folder, as a shell argument is).
LoadedConfig load_config(const ConfigurationSource& source);

/// The keys load_config reads relative to the file's folder: [model]'s `data`, `test_data` and
/// any key ending in `_file`, and [run]'s `init`.
bool names_a_file(const std::string& section, const std::string& key);

/// Joins each relative file name (names_a_file) to `folder`; the origin is kept.
void resolve_file_names(sgmcmc::RunConfig& config, const std::filesystem::path& folder);

/// A preset's relative file names (names_a_file, set by the preset itself, not by --set) name
/// data installed with its model plugin: they are joined to the `data/<model.name>/` folder
/// beside the plugin file (sgmcmc_add_plugin_data in CMake), found by `plugin_file` only when
/// there is such a name. A preset then reads its real data from a build tree and from an
/// installed sgmcmc alike.
void resolve_preset_data_files(sgmcmc::RunConfig& config, const std::function<std::filesystem::path()>& plugin_file);

/// The plugin that [model] names (model.name; "" when unset, which building a model refuses).
std::string model_name(sgmcmc::SectionReader model);

/// Registers a ConfigurationSource's options on `command`.
void add_configuration_options(CLI::App& command, ConfigurationSource& source);

/// Throws, naming `command`, when neither --preset nor --config was given.
void require_configuration(const ConfigurationSource& source, const std::string& command);
