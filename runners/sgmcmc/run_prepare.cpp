// Building a run (run.hpp): its schedule, its model (or a sweep's shared one), every chain's parts
// and recorders, and the checks of its keys and its combination.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <ctime>
#include <exception>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>
#include <cstdio>
#include <malloc.h>
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SGMCMC_ADDRESS_SANITIZER 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(SGMCMC_ADDRESS_SANITIZER)
#include <sanitizer/allocator_interface.h>  // heap_bytes_in_use
#endif
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "burn_in.hpp"
#include "chain_files.hpp"
#include "commands.hpp"
#include "configuration.hpp"
#include "data_parallel_run.hpp"
#include "files.hpp"
#include "interruption.hpp"
#include "progress.hpp"
#include "prepared_run.hpp"
#include "run.hpp"
#include "run_folder.hpp"
#include "run_record.hpp"
#include "start_points.hpp"

import sgmcmc;

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// The bytes malloc has handed out and not had back. Under AddressSanitizer, whose allocator
/// replaces glibc's, from ASan's own count: glibc's mallinfo2 then reads arenas that were never
/// set up and crashed in a sweep's validation threads (found by the hostile sweep under ASan).
std::size_t heap_bytes_in_use() {
#if defined(__SANITIZE_ADDRESS__) || defined(SGMCMC_ADDRESS_SANITIZER)
  return __sanitizer_get_current_allocated_bytes();
#else
  const auto info = mallinfo2();
  return info.uordblks + info.hblkhd;
#endif
}

/// Refuses, naming run.chains, more chains than the memory budget holds: each holds what building
/// chain 1 took (its state, estimator, integrator, corrector and model workspace), and at least
/// its state's vectors and its output file's stdio buffer.
void check_chain_memory(const sgmcmc::Settings& run, std::uint64_t chains, std::size_t measured, std::size_t dimension) {
  const std::size_t floor = 8 * sizeof(double) * dimension + 2 * BUFSIZ;
  const double each = static_cast<double>(std::max(measured, floor));
  const double budget = static_cast<double>(sgmcmc::memory_budget_bytes());
  if (budget > 0 && each * static_cast<double>(chains) > budget)
    throw sgmcmc::Error(fmt::format("{}: {} chains of about {:.3g} MB each (measured while building chain 1) need {:.3g} GB, "
                                    "more than {}; run fewer chains at once",
                                    run.describe("chains"), chains, each / 1e6, each * static_cast<double>(chains) / 1e9,
                                    sgmcmc::memory_budget_description()));
}

}  // namespace

void PreparedRunDeleter::operator()(PreparedRun* run) const { delete run; }

namespace {

/// Loads the plugin [model] names and builds its model, holding the share `rows` of the training
/// rows when the plugin can (run.data_parallel).
std::shared_ptr<const BuiltModel> build_model(const sgmcmc::RunConfig& config, std::uint64_t data_seed, const std::string& source,
                                              const std::optional<fs::path>& plugin_dir, sgmcmc::RowShare rows = {}) {
  sgmcmc::SectionReads reads;
  const sgmcmc::SectionReader section(config["model"], reads);
  const std::string name = model_name(section);
  if (name.empty()) throw sgmcmc::Error(fmt::format("{}: [model] needs a name (see `sgmcmc list`)", source));
  std::optional<sgmcmc::LoadedPlugin> plugin;
  try {
    plugin.emplace(sgmcmc::load_plugin(name, plugin_folders(plugin_dir)));
  } catch (const sgmcmc::Error& error) {
    throw ModelNotLoadable(error.what());
  }
  auto model = plugin->create({section, data_seed, rows});
  // Taken once the model has read its files, once per model (a sweep's cells share it).
  auto data_files = data_fingerprints({{"model", resolved_section(reads)}}, {"model"});
  return std::make_shared<const BuiltModel>(BuiltModel{*plugin, std::move(model), std::move(reads), std::move(data_files)});
}

/// What makes two cells' models the same: the [model] keys and values, the data seed and where
/// plugins are looked for.
std::string model_key(const sgmcmc::RunConfig& config, std::uint64_t data_seed, const std::optional<fs::path>& plugin_dir) {
  json key = json::object();
  for (const auto& [name, entry] : config["model"].entries()) key[name] = to_json(entry.value);
  return fmt::format("{}|{}|{}", key.dump(), data_seed, plugin_dir ? plugin_dir->string() : "");
}

}  // namespace

std::shared_ptr<const BuiltModel> ModelCache::get(const sgmcmc::RunConfig& config, std::uint64_t data_seed,
                                                  const std::string& source, const std::optional<fs::path>& plugin_dir,
                                                  bool& shared) {
  std::shared_ptr<Slot> slot;
  {
    const std::lock_guard lock(mutex_);
    auto& found = slots_[model_key(config, data_seed, plugin_dir)];
    if (!found) found = std::make_shared<Slot>();
    slot = found;
  }
  const std::lock_guard building(slot->building);
  auto model = slot->model.lock();
  shared = model != nullptr;
  if (shared) return model;
  model = build_model(config, data_seed, source, plugin_dir);
  slot->model = model;
  return model;
}

std::shared_ptr<const BuiltModel> model_of(const PreparedRun& run) { return run.built; }

PreparedRunPtr prepare_run(sgmcmc::RunConfig config, const std::string& source,
                           const std::optional<fs::path>& plugin_dir, ModelCache* models,
                           std::shared_ptr<sgmcmc::RankGroup> ranks) {
  PreparedRunPtr run(new PreparedRun);
  run->config = std::move(config);
  run->source = source;
  auto& cfg = run->config;
  const auto read = run->reader();
  run->plan.schedule = sgmcmc::read_run_schedule(read["run"], read["integrator"]);
  resolve_preset_data_files(cfg, [&] {
    try {
      return sgmcmc::load_plugin(model_name(read["model"]), plugin_folders(plugin_dir)).path();
    } catch (const sgmcmc::Error& error) {
      throw ModelNotLoadable(error.what());
    }
  });
  const auto& schedule = run->plan.schedule;

  run->built = models ? models->get(cfg, schedule.data_seed, source, plugin_dir, run->model_shared)
                      : build_model(cfg, schedule.data_seed, source, plugin_dir,
                                    schedule.data_parallel && ranks ? sgmcmc::RowShare{ranks->rank(), ranks->size()}
                                                                    : sgmcmc::RowShare{});
  run->reads["model"].add(run->built->reads);  // the keys the model read, when another run's build read them
  run->model_name = model_name(read["model"]);
  run->model_seconds = run->elapsed();
  if (schedule.data_parallel) {  // the chains are built on the split model (a copy: a cache's model stays whole)
    check_data_parallel(read, schedule, *run->model(), ranks != nullptr);
    auto split = std::make_shared<BuiltModel>(*run->built);
    split->model = sgmcmc::data_parallel_model(split->model, std::move(ranks));
    run->built = std::move(split);
  }
  // A refusal for want of a capability names the plugin.
  const auto naming_model = [&](auto build) {
    try {
      return build();
    } catch (const sgmcmc::Error& error) {
      throw sgmcmc::Error(fmt::format("{} (model '{}')", error.what(), run->model_name));
    }
  };
  // Every section is read and checked once; every chain gets its own parts, all built here from
  // the plan before any thread starts. The first is measured, so that all of them are checked
  // against the memory budget before the others exist.
  run->plan = naming_model([&] { return sgmcmc::plan_run(read, schedule, run->model()); });
  const auto& plan = run->plan;
  const auto make = [&](std::uint64_t k) {
    return naming_model([&] { return sgmcmc::make_chain(plan.chain, run->model(), sgmcmc::Rng(schedule.seed, sgmcmc::chain_stream(k))); });
  };
  const std::size_t before = heap_bytes_in_use();
  auto first = make(0);
  const std::size_t after = heap_bytes_in_use();
  check_chain_memory(cfg["run"], schedule.chains, after > before ? after - before : 0, run->model()->dimension());
  run->jobs.resize(schedule.chains);
  run->jobs[0].chain = std::move(first);
  for (std::uint64_t k = 1; k < schedule.chains; ++k) run->jobs[k].chain = make(k);
  run->tests_acceptance = run->jobs[0].chain->corrector().tests_acceptance();
  if (plan.burn_in)
    for (std::uint64_t k = 0; k < schedule.chains; ++k)
      run->jobs[k].burn_in = std::make_unique<BurnIn>(*plan.burn_in, run->model(), k);
  // Read on --resume too: a chain interrupted before its first checkpoint starts again. With a
  // burn-in, that starts there, and the chain at the burn-in's end.
  const auto starts = read_start_points(read["run"], *run->model(), schedule.chains);
  for (std::size_t k = 0; k < starts.size(); ++k) {
    if (run->jobs[k].burn_in) run->jobs[k].burn_in->start_at(starts[k].theta);
    else run->jobs[k].chain->start_at(starts[k].theta);
    run->jobs[k].start = starts[k].origin;
  }
  run->recorders.resize(schedule.chains);
  if (plan.recorded_gradients || plan.output.quantities)
    for (std::uint64_t k = 0; k < schedule.chains; ++k)
      run->recorders[k] = std::make_unique<sgmcmc::DrawRecorder>(run->model(), plan.output, plan.recorded_gradients,
                                                                 sgmcmc::Rng(schedule.seed, sgmcmc::recording_stream(k)));
  return run;
}

std::vector<std::string> check_keys(PreparedRun& run) {
  // Keys of another component than the chosen one (batch_size with `exact`) are ignored with a
  // warning, so one file can serve several choices; any other unread key is an error.
  const std::map<std::string, std::vector<std::string>> keys_of_alternatives = {
      {"estimator", sgmcmc::all_keys(sgmcmc::estimator_catalogue())},
      {"integrator", sgmcmc::all_keys(sgmcmc::integrator_catalogue())},
      {"corrector", sgmcmc::all_keys(sgmcmc::corrector_catalogue())}};
  run.warnings.clear();
  for (const auto& [name, settings] : run.config.sections) {
    const auto alternatives = keys_of_alternatives.find(sgmcmc::main_section_of(name));  // [burn_in.integrator] too
    for (auto& warning : sgmcmc::reject_unknown_keys(settings, run.reads[name],
                                                     alternatives == keys_of_alternatives.end() ? std::vector<std::string>{}
                                                                                                : alternatives->second))
      run.warnings.push_back(std::move(warning));
  }
  return run.warnings;
}

void check_run(const PreparedRun& run) {
  run.jobs.front().chain->check(run.plan.schedule.chain);
}
