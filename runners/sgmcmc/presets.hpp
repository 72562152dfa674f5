// Presets: the TOML files of runners/presets/, embedded in the binary at build time.
#pragma once
#include <span>
#include <string>
#include <string_view>

/// The folder every preset's source names (runners/CMakeLists.txt embeds them so): the origin of
/// the keys a preset sets starts with it.
inline constexpr std::string_view preset_folder = "runners/presets/";

struct EmbeddedPreset {
  const char* name;
  const char* source;  // "runners/presets/demo.toml": how errors name it
  const char* text;
};

std::span<const EmbeddedPreset> embedded_presets();

/// The preset called `name`, or an Error listing the known ones.
const EmbeddedPreset& find_preset(const std::string& name);

/// The first comment line of a preset, its one-line description.
std::string preset_description(const EmbeddedPreset& preset);
