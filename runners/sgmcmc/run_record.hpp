// The record a checkpointed run keeps in its folder (config.toml, checkpoint.json): what
// `sgmcmc run --resume` rebuilds the run from, and what a resumed run must match, so that its
// chains continue bit for bit.
#pragma once
#include <filesystem>
#include <string>
#include <nlohmann/json.hpp>

import sgmcmc;

/// config.toml (the keys set) and checkpoint.json (this sgmcmc's version, `source` and the
/// `resolved` configuration), before any chain starts.
void record_run(const std::filesystem::path& out, const std::string& source, const sgmcmc::RunConfig& config,
                const nlohmann::json& resolved);

/// `out`'s checkpoint.json.
nlohmann::json read_recorded_run(const std::filesystem::path& out);

/// Throws unless `out`'s checkpoint.json records this very run: the same sgmcmc and the same
/// resolved configuration (a checkpoint restored into another configuration would not continue
/// the chain it came from).
void check_recorded_run(const std::filesystem::path& out, const nlohmann::json& resolved);
