// A run's configuration: a TOML document (a preset or the user's file) with the sections
// [model], [estimator], [integrator], [corrector], [run] and [output], plus `--set section.key=value`
// overrides. Every value remembers where it came from, so errors can say file:line.
module;
#include <array>
#include <charconv>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>
#include <fmt/format.h>
export module sgmcmc.config;
import sgmcmc.error;
export import sgmcmc.settings;
import sgmcmc.io;

export namespace sgmcmc {

/// Parses TOML text; `source` names it in errors ("runners/presets/demo.toml", "my.toml").
RunConfig parse_config(std::string_view text, const std::string& source);

/// The keys set explicitly (not the defaults) as TOML that parse_config reads back to the same
/// values, types and bits: a checkpointed run's config.toml, from which --resume rebuilds it.
std::string format_config(const RunConfig& config);

/// The elements of an array (from a configuration file, a --set or a sweep file) as one value: an
/// array of numbers (integers among them read as numbers) or of strings, as the Settings getters
/// want it. An array mixing the two, or holding anything else, is an error naming `where`.
Value array_value(const std::vector<Value>& elements, const std::string& where);
/// Applies `section.key=value`. The value is read as an array of numbers (`[1.0, 2.5]`, TOML's
/// syntax), a boolean, an integer, a number or else a string (quotes optional).
void apply_override(RunConfig& config, const std::string& assignment);

}  // namespace sgmcmc

