// The record a checkpointed run keeps in its folder (config.toml, checkpoint.json): what
// `sgmcmc run --resume` rebuilds the run from, and what a resumed run must match, so that its
// chains continue bit for bit.
#pragma once
#include <filesystem>
#include <string>
#include <vector>
#include <nlohmann/json.hpp>

import sgmcmc;

/// config.toml (the keys set) and checkpoint.json (this sgmcmc's version, `source`, the
/// `resolved` configuration, the fingerprints of its `data_files` and, for run.data_parallel, the
/// job's `data_parallel` record), before any chain starts.
void record_run(const std::filesystem::path& out, const std::string& source, const sgmcmc::RunConfig& config,
                const nlohmann::json& resolved, const nlohmann::json& data_files,
                const nlohmann::json& data_parallel = nullptr);

/// What a file the configuration names holds, cheaply told apart from any other content: its
/// size, its modification time and the 64-bit XXH64 hash of its bytes (one pass at memory speed,
/// small beside parsing the file). A resumed chain continues bit for bit only on the data it began
/// with. For a folder (run.init may name a run folder) its chain-<k>.csv files; for a path that is
/// not there or not a regular file, what it is.
nlohmann::json file_fingerprint(const std::filesystem::path& path);

/// The fingerprints of the files the `sections` of the resolved configuration name
/// (names_a_file): {"model.data": {"path": ..., "size": ..., ...}, ...}.
nlohmann::json data_fingerprints(const nlohmann::json& resolved, const std::vector<std::string>& sections);

/// "model.data '<path>': size 120 bytes here, 118 recorded; ...", one per recorded file whose
/// size or bytes differ from `now` (the modification time alone changes nothing: the bytes are
/// the same); empty when checkpoint.json recorded no fingerprints (made before they were).
std::vector<std::string> changed_data(const nlohmann::json& recorded_run, const nlohmann::json& now);

/// `out`'s checkpoint.json.
nlohmann::json read_recorded_run(const std::filesystem::path& out);

/// Throws unless `out`'s checkpoint.json records this very run: the same sgmcmc and the same
/// resolved configuration (a checkpoint restored into another configuration would not continue
/// the chain it came from).
void check_recorded_run(const std::filesystem::path& out, const nlohmann::json& resolved);
