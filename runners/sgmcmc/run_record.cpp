// The record of a checkpointed run (see run_record.hpp).
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "files.hpp"
#include "run_folder.hpp"
#include "run_record.hpp"

import sgmcmc;

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// "section.key: <here> here, <there> recorded", one per key that differs.
std::vector<std::string> config_differences(const json& here, const json& recorded) {
  std::vector<std::string> differences;
  std::map<std::string, std::pair<json, json>> keys;
  for (const auto& [section, values] : here.items())
    for (const auto& [key, value] : values.items()) keys[section + "." + key].first = value;
  for (const auto& [section, values] : recorded.items())
    for (const auto& [key, value] : values.items()) keys[section + "." + key].second = value;
  for (const auto& [key, values] : keys)
    if (values.first != values.second)
      differences.push_back(fmt::format("{}: {} here, {} recorded", key, values.first.is_null() ? "unset" : values.first.dump(),
                                        values.second.is_null() ? "unset" : values.second.dump()));
  return differences;
}

}  // namespace

void record_run(const fs::path& out, const std::string& source, const sgmcmc::RunConfig& config, const json& resolved) {
  write_atomically(out / run_folder::config,
                   fmt::format("# The keys set for this run ({}), which `sgmcmc run --resume` rebuilds it from.\n{}",
                               source, sgmcmc::format_config(config)));
  const json recorded = {{"sgmcmc_version", SGMCMC_VERSION}, {"source", source}, {"config", resolved}};
  write_atomically(out / run_folder::checkpoint_record, recorded.dump(2) + "\n");
}

json read_recorded_run(const fs::path& out) {
  const fs::path path = out / run_folder::checkpoint_record;
  try {
    return json::parse(read_file(path, "the record of the checkpointed run"));
  } catch (const json::exception& error) {
    throw sgmcmc::Error(fmt::format("{}: not a record of a checkpointed run ({})", path.string(), error.what()));
  }
}

void check_recorded_run(const fs::path& out, const json& resolved) {
  const json recorded = read_recorded_run(out);
  const fs::path path = out / run_folder::checkpoint_record;
  if (recorded.value("sgmcmc_version", "") != SGMCMC_VERSION)
    throw sgmcmc::Error(fmt::format("{}: the run was made by sgmcmc {}, this is {}; its chains cannot be continued bit "
                                    "for bit (nothing was changed)",
                                    path.string(), recorded.value("sgmcmc_version", "?"), SGMCMC_VERSION));
  if (const auto differences = config_differences(resolved, recorded["config"]); !differences.empty())
    throw sgmcmc::Error(fmt::format("{}: the configuration differs from the one this folder was run with ({}); resume "
                                    "with the same configuration, or start a new run (nothing was changed)",
                                    path.string(), fmt::join(differences, "; ")));
}
