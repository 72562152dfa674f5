// What run_prepare.cpp builds and run_execute.cpp runs: a run's schedule, its chains' jobs and the
// prepared run (run.hpp is what the subcommands see).
#pragma once
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>
#include <nlohmann/json.hpp>

#include "burn_in.hpp"
#include "chain_files.hpp"
#include "run.hpp"

import sgmcmc;

struct ChainJob {
  std::unique_ptr<sgmcmc::Chain> chain;
  std::unique_ptr<ChainFiles> files;
  sgmcmc::ChainResult result;
  std::exception_ptr failure;
  std::uint64_t resumed_at = 0;  // the iteration of the checkpoint it continued from, if any
  std::string start;             // run.init: the file and draw it started from
  std::unique_ptr<BurnIn> burn_in;  // [burn_in]: run first, unless the chain resumes after it
};

struct PreparedRun {
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::chrono::system_clock::time_point started_at = std::chrono::system_clock::now();  // for the manifest
  sgmcmc::RunConfig config;
  sgmcmc::ConfigReads reads;  // what the run read of `config`: the unknown-key check and the manifest
  std::string source;
  /// Every section read and checked once for the model (sgmcmc.run_plan): [run]'s schedule,
  /// [output], the chains' and the burn-in's parts, the recorded gradients' estimator.
  sgmcmc::RunPlan plan;
  std::string model_name;
  std::shared_ptr<const BuiltModel> built;
  double model_seconds = 0.0;  // this run spent getting its model (0 when shared)
  bool model_shared = false;   // taken from a sweep's ModelCache
  bool tests_acceptance = false;
  std::vector<ChainJob> jobs;
  std::vector<std::unique_ptr<sgmcmc::DrawRecorder>> recorders;
  std::vector<std::string> warnings;
  bool allow_changed_data = false;    // --allow-changed-data: resume on data other than the run began with
  /// run.data_parallel: the manifest's `data_parallel` record, given the chain's iterations.
  std::function<nlohmann::json(std::uint64_t iterations)> data_parallel_record;
  /// run.data_parallel: what checkpoint.json records of the job ({"ranks": P}), null otherwise.
  nlohmann::json data_parallel_checkpoint;

  const std::shared_ptr<const sgmcmc::Model>& model() const { return built->model; }
  sgmcmc::ConfigReader reader() { return {config, reads}; }
  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); }
};

/// A configuration value as JSON.
inline nlohmann::json to_json(const sgmcmc::Value& value) {
  return std::visit([](const auto& v) { return nlohmann::json(v); }, value);
}

/// A section's every key read, with the value in force (defaults included).
inline nlohmann::json resolved_section(const sgmcmc::SectionReads& reads) {
  nlohmann::json keys = nlohmann::json::object();
  for (const auto& [key, value] : reads.in_force) keys[key] = to_json(value);
  return keys;
}

/// Every section of `config` as resolved_section records it (empty where nothing was read).
inline nlohmann::json resolved_config(const sgmcmc::RunConfig& config, const sgmcmc::ConfigReads& reads) {
  nlohmann::json sections = nlohmann::json::object();
  for (const auto& [name, settings] : config.sections) {
    const auto found = reads.find(name);
    sections[name] = resolved_section(found == reads.end() ? sgmcmc::SectionReads{} : found->second);
  }
  return sections;
}
