// A catalogue of named components (estimators, integrators, correctors): the run chooses one
// by the `name` key of its section. One lookup serves all three, with the same error wording.
module;
#include <algorithm>
#include <functional>
#include <string>
#include <vector>
#include <fmt/format.h>
export module sgmcmc.catalogue;
import sgmcmc.error;
import sgmcmc.settings;
export import sgmcmc.fields;

export namespace sgmcmc {

/// `Reader` reads and checks the entry's keys of a section once and returns a recipe: a function
/// that builds the component from those typed parameters, as often as there are chains, without
/// reading text again (sgmcmc.assembly's ChainPlan holds one recipe per part).
template <class Reader>
struct CatalogueEntry {
  std::string name;
  std::string description;
  std::vector<std::string> keys;  // the section keys it reads besides `name`
  Reader read;
  /// Why a Metropolis–Hastings corrector cannot follow this estimator or integrator (it would not
  /// be exact), or "" if it can. A declared property, so `sgmcmc list` can show it without a model.
  std::string mh_refusal = {};
  /// `keys` with their defaults, constraints and docs, where the entry's parameters have a field
  /// table (the integrators): `keys` is then keys_of(documented_keys).
  std::vector<KeyDoc> documented_keys = {};
};

/// One row of a section's key table: a documented key and the entries that read it.
struct KeyRow {
  KeyDoc key;
  std::vector<std::string> used_by;
};

/// The documented keys of every entry, each once, in the order they first appear: what `sgmcmc
/// list` prints and the docs' key table shows (a key documented two ways gets a row for each).
template <class Reader>
std::vector<KeyRow> key_table(const std::vector<CatalogueEntry<Reader>>& catalogue) {
  std::vector<KeyRow> rows;
  for (const auto& entry : catalogue)
    for (const auto& key : entry.documented_keys) {
      auto row = std::find_if(rows.begin(), rows.end(), [&](const KeyRow& r) { return r.key == key; });
      if (row == rows.end()) rows.push_back({key, {entry.name}});
      else row->used_by.push_back(entry.name);
    }
  return rows;
}

/// Which entries read the row's key: "all", "all but psgld", or their names, whichever is shorter.
template <class Reader>
std::string used_by_text(const KeyRow& row, const std::vector<CatalogueEntry<Reader>>& catalogue) {
  std::vector<std::string> others;
  for (const auto& entry : catalogue)
    if (std::find(row.used_by.begin(), row.used_by.end(), entry.name) == row.used_by.end()) others.push_back(entry.name);
  if (others.empty()) return "all";
  if (others.size() < row.used_by.size()) return fmt::format("all but {}", fmt::join(others, ", "));
  return fmt::format("{}", fmt::join(row.used_by, ", "));
}

/// Every key any entry reads: a key of another entry than the chosen one is "not used", not
/// "unknown".
template <class Reader>
std::vector<std::string> all_keys(const std::vector<CatalogueEntry<Reader>>& catalogue) {
  std::vector<std::string> keys;
  for (const auto& entry : catalogue) keys.insert(keys.end(), entry.keys.begin(), entry.keys.end());
  return keys;
}

/// The entry named by `section.name` (or `fallback`), or an Error that lists the known names.
template <class Reader>
const CatalogueEntry<Reader>& choose(const std::vector<CatalogueEntry<Reader>>& catalogue,
                                      SectionReader section, const std::string& fallback) {
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
