// The one exception type of the framework. It is declared here, in the core shared library,
// so a plugin that throws it and the runner that catches it agree on its typeinfo.
module;
#include <stdexcept>
#include <string>
export module sgmcmc.error;

export namespace sgmcmc {

/// A problem the user can fix: bad input, an impossible combination, a plugin that does not load.
/// The message names the file, line, key or plugin, and what was expected.
class Error : public std::runtime_error {
public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace sgmcmc
