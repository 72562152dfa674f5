// The one exception type of the framework. It is declared here, in the core shared library,
// so a plugin that throws it and the runner that catches it agree on its typeinfo.
module;
#include <stdexcept>
#include <string>
#include <string_view>
#include <fmt/format.h>
export module sgmcmc.error;

export namespace sgmcmc {

/// A problem the user can fix: bad input, an impossible combination, a plugin that does not load.
/// The message names the file, line, key or plugin, and what was expected.
class Error : public std::runtime_error {
public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// The check a component built from plain parameters makes where it cannot quote a key's origin
/// (sgmcmc.sampler's components; their Settings adapters, `from_settings`, check first and name the
/// key): throws "{component}: expected {expectation}, found {value}" unless `holds`.
template <class Number>
void require_parameter(bool holds, std::string_view component, std::string_view expectation, Number value) {
  if (!holds) throw Error(fmt::format("{}: expected {}, found {}", component, expectation, value));
}

}  // namespace sgmcmc
