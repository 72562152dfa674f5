#include "presets.hpp"

#include <string>
#include <vector>
#include <fmt/format.h>

import sgmcmc;

const EmbeddedPreset& find_preset(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& preset : embedded_presets()) {
    if (name == preset.name) return preset;
    names.emplace_back(preset.name);
  }
  std::string message = fmt::format("unknown preset '{}'", name);
  if (auto suggestion = sgmcmc::closest_match(name, names); !suggestion.empty())
    message += fmt::format(" (did you mean '{}'?)", suggestion);
  throw sgmcmc::Error(message + fmt::format("; known: {} (see `sgmcmc presets`)", fmt::join(names, ", ")));
}

std::string preset_description(const EmbeddedPreset& preset) {
  std::string text = preset.text;
  if (!text.starts_with("#")) return "";
  std::string line = text.substr(0, text.find('\n'));
  return line.substr(line.find_first_not_of("# "));
}
