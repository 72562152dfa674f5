// A catalogue of named components (estimators, integrators, correctors): the run chooses one
// by the `name` key of its section. One lookup serves all three, with the same error wording.
module;
#include <functional>
#include <string>
#include <vector>
#include <fmt/format.h>
export module sgmcmc.catalogue;
import sgmcmc.error;
import sgmcmc.settings;

export namespace sgmcmc {

template <class Factory>
struct CatalogueEntry {
  std::string name;
  std::string description;
  std::vector<std::string> keys;  // the section keys it reads besides `name`
  Factory make;
  /// Why a Metropolis–Hastings corrector cannot follow this estimator or integrator (it would not
  /// be exact), or "" if it can. A declared property, so `sgmcmc list` can show it without a model.
  std::string mh_refusal = {};
};

/// Every key any entry reads: a key of another entry than the chosen one is "not used", not
/// "unknown".
template <class Factory>
std::vector<std::string> all_keys(const std::vector<CatalogueEntry<Factory>>& catalogue) {
  std::vector<std::string> keys;
  for (const auto& entry : catalogue) keys.insert(keys.end(), entry.keys.begin(), entry.keys.end());
  return keys;
}

/// The entry named by `section.name` (or `fallback`), or an Error that lists the known names.
template <class Factory>
const CatalogueEntry<Factory>& choose(const std::vector<CatalogueEntry<Factory>>& catalogue,
                                      const Settings& section, const std::string& fallback) {
  const std::string wanted = section.text("name", fallback);
  std::vector<std::string> names;
  for (const auto& entry : catalogue) {
    if (entry.name == wanted) return entry;
    names.push_back(entry.name);
  }
  std::string message = fmt::format("{}: unknown {} '{}'", section.describe("name"), section.section(), wanted);
  if (auto suggestion = closest_match(wanted, names); !suggestion.empty())
    message += fmt::format(" (did you mean '{}'?)", suggestion);
  message += fmt::format("; known: {}", fmt::join(names, ", "));
  throw Error(message);
}

}  // namespace sgmcmc
