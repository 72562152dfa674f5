// `sgmcmc run`: configuration → model and chains → the files of a run's output folder
// (run_folder.hpp), which chain_files.hpp and run_record.hpp write.
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
#include "files.hpp"
#include "interruption.hpp"
#include "progress.hpp"
#include "run.hpp"
#include "run_folder.hpp"
#include "run_record.hpp"
#include "start_points.hpp"

import sgmcmc;

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

LoadedConfig load_run_config(const RunOptions& options) {
  LoadedConfig loaded;
  if (options.preset || options.config_file) {
    loaded = load_config(options.preset, options.config_file, options.overrides);
  } else {  // --resume DIR alone: the configuration the run wrote there
    const fs::path file = *options.resume / run_folder::config;
    loaded = {sgmcmc::parse_config(read_file(file, "the configuration the run recorded"), file.string()), "", file.string()};
    for (const auto& assignment : options.overrides) sgmcmc::apply_override(loaded.config, assignment);
  }
  if (options.seed) sgmcmc::apply_override(loaded.config, fmt::format("run.seed={}", *options.seed));
  if (options.chains) sgmcmc::apply_override(loaded.config, fmt::format("run.chains={}", *options.chains));
  if (options.checkpoint_every)
    sgmcmc::apply_override(loaded.config, fmt::format("run.checkpoint_every={}", *options.checkpoint_every));
  return loaded;
}

struct RunSchedule {
  sgmcmc::ChainSchedule chain;
  std::uint64_t chains;
  std::uint64_t seed;
  std::uint64_t data_seed;  // the model's simulated data and splits; run.seed unless set
};

RunSchedule read_schedule(const sgmcmc::Settings& run) {
  RunSchedule schedule;
  schedule.chain.warmup = static_cast<std::uint64_t>(run.integer_at_least("warmup", 0, 0));
  schedule.chain.iterations = static_cast<std::uint64_t>(run.integer_at_least("iterations", 1000, 1));
  schedule.chain.thin = static_cast<std::uint64_t>(run.integer_at_least("thin", 1, 1));
  if (schedule.chain.thin > schedule.chain.iterations)
    throw sgmcmc::Error(fmt::format("{}: run.thin = {} is more than run.iterations = {}, so the chain would record no draws",
                                    run.describe("thin"), schedule.chain.thin, schedule.chain.iterations));
  schedule.chain.eval_every = static_cast<std::uint64_t>(run.integer_at_least("eval_every", 10, 1));
  schedule.chain.compute_lp = run.flag("lp", false);
  // Read only when set, as checkpoint_every: runs without it record no such key (their files,
  // and the configuration a resumed run is checked against, are as before there was one).
  if (run.contains("temperatures")) schedule.chain.temperatures = run.flag("temperatures", false);
  // Read only when set: runs without checkpoints record no such key (their files are unchanged).
  if (run.contains("checkpoint_every"))
    schedule.chain.checkpoint_every = static_cast<std::uint64_t>(run.integer_at_least("checkpoint_every", 0, 0));
  // Read only when set, as temperatures (the default, 1e10, is ChainSchedule's).
  if (run.contains("divergence_threshold")) {
    schedule.chain.divergence_threshold = run.number("divergence_threshold", 0.0);
    if (schedule.chain.divergence_threshold != 0.0 && !(schedule.chain.divergence_threshold > 1.0))
      throw sgmcmc::Error(fmt::format("{}: expected 0 (only a θ that is not finite stops a chain) or a factor above 1 "
                                      "of the start's scale, found {}",
                                      run.describe("divergence_threshold"), schedule.chain.divergence_threshold));
  }
  schedule.chains = static_cast<std::uint64_t>(run.integer_at_least("chains", 1, 1));
  schedule.seed = static_cast<std::uint64_t>(run.integer_at_least("seed", 1, 0));
  // Separate, so that chains of several seeds can sample one data set (box plots across seeds).
  schedule.data_seed = static_cast<std::uint64_t>(run.integer_at_least("data_seed", static_cast<std::int64_t>(schedule.seed), 0));
  return schedule;
}

/// The folder for the run's files, created if need be. A folder that holds files is kept unless
/// --replace: a run never silently overwrites another's results.
fs::path create_output(const RunOptions& options, const std::string& label) {
  fs::path out;
  if (options.out) {
    out = *options.out;
  } else {
    const std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
    out = fs::path("runs") / fmt::format("{}-{}", label, stamp);
    for (int k = 2; fs::exists(out); ++k) out = fs::path("runs") / fmt::format("{}-{}-{}", label, stamp, k);
  }
  std::error_code error;
  require_folder_or_absent(out);
  if (fs::exists(out) && !fs::is_empty(out) && !options.replace)
    throw sgmcmc::Error(fmt::format("output folder '{}' is not empty; choose another --out, or add --replace", out.string()));
  fs::create_directories(out, error);
  if (error) throw sgmcmc::Error(fmt::format("output folder '{}': {}", out.string(), error.message()));
  return out;
}

/// With --replace, removes the files of the run `out` held (under the folder's lock: they may
/// still be another process's files until it is taken).
void remove_run_files(const fs::path& out) {
  std::error_code error;
  for (const char* stale : {run_folder::manifest, run_folder::metrics, run_folder::config, run_folder::checkpoint_record})
    fs::remove(out / stale, error);
  for (const auto& entry : fs::directory_iterator(out))
    if (const auto name = entry.path().filename().string(); name.starts_with(run_folder::chain_prefix) ||
                                                            name.starts_with(run_folder::gradients_prefix) ||
                                                            name.starts_with(run_folder::checkpoint_prefix))
      fs::remove(entry.path(), error);
}

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

double seconds_since_epoch(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}


json to_json(const sgmcmc::Value& value) {
  return std::visit([](const auto& v) { return json(v); }, value);
}

/// A section's every key in force, defaults included.
json resolved_section(const sgmcmc::Settings& settings) {
  json keys = json::object();
  for (const auto& [key, value] : settings.resolved()) keys[key] = to_json(value);
  return keys;
}

/// The resolved configuration: every key in force, defaults included, by section.
json resolved_config(const sgmcmc::RunConfig& config) {
  json sections = json::object();
  for (const auto& [name, settings] : config.sections) sections[name] = resolved_section(settings);
  return sections;
}

std::vector<std::string> config_comment_lines(const json& config) {
  std::vector<std::string> lines;
  for (const auto& [section, keys] : config.items())
    for (const auto& [key, value] : keys.items()) lines.push_back(fmt::format("{}.{} = {}", section, key, value.dump()));
  return lines;
}

struct ChainJob {
  std::unique_ptr<sgmcmc::Chain> chain;
  std::unique_ptr<ChainFiles> files;
  sgmcmc::ChainResult result;
  std::exception_ptr failure;
  std::uint64_t resumed_at = 0;  // the iteration of the checkpoint it continued from, if any
  std::string start;             // run.init: the file and draw it started from
  std::unique_ptr<BurnIn> burn_in;  // [burn_in]: run first, unless the chain resumes after it
};

/// Ends `job` before its first iteration of this run (a stop was requested): it stays where its
/// checkpoint, if any, left it, and a resumed run continues it from there (or afresh).
void stop_before_start(ChainJob& job, std::string message) {
  job.result.stopped = job.result.interrupted = true;
  job.result.iterations = job.chain->state().iteration;
  job.result.message = std::move(message);
  job.files->close(job.result);
}

/// Runs every job on `threads` threads. Chains are independent (own stream, workspace and
/// parts), so which thread runs which chain changes nothing in their output. A chain not yet
/// started when a stop is requested does not start: it stays where its checkpoint (if any) is.
void run_jobs(std::vector<ChainJob>& jobs, const sgmcmc::ChainSchedule& schedule, unsigned threads,
              std::atomic<std::uint64_t>* progress) {
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t k; (k = next.fetch_add(1)) < jobs.size();) {
      try {
        if (schedule.stop_requested && schedule.stop_requested->load()) {
          stop_before_start(jobs[k], "");
          continue;
        }
        try {
          jobs[k].files->prepare(schedule.stop_requested);
        } catch (const sgmcmc::StopRequested&) {
          stop_before_start(jobs[k], "interrupted before its first iteration (in the draw recorder's centring phase, "
                                     "output.gradients = \"cv\"); a resumed run starts this chain afresh");
          continue;
        }
        if (jobs[k].burn_in && jobs[k].resumed_at == 0)
          if (auto ended = jobs[k].burn_in->run(*jobs[k].chain, schedule, progress)) {
            jobs[k].result = std::move(*ended);
            jobs[k].files->close(jobs[k].result);
            continue;
          }
        std::optional<WithBurnInRecord> with_record;
        if (jobs[k].burn_in) with_record.emplace(*jobs[k].files, *jobs[k].burn_in);
        jobs[k].result = jobs[k].chain->run(schedule, with_record ? *with_record : static_cast<sgmcmc::ChainObserver&>(*jobs[k].files), progress);
        jobs[k].files->close(jobs[k].result);
      } catch (...) {
        jobs[k].failure = std::current_exception();
      }
    }
  };
  std::vector<std::jthread> pool;
  // No more threads than chains: --threads 100000 would otherwise start idle threads until the
  // system (or a sanitizer's allocator) runs out.
  for (std::size_t t = 1; t < std::min<std::size_t>(threads, jobs.size()); ++t) pool.emplace_back(worker);
  worker();
}

}  // namespace

struct PreparedRun {
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::chrono::system_clock::time_point started_at = std::chrono::system_clock::now();  // for the manifest
  sgmcmc::RunConfig config;
  std::string source;
  RunSchedule schedule;
  std::optional<BurnInPlan> burn_in;
  std::string model_name;
  std::shared_ptr<const BuiltModel> built;
  double model_seconds = 0.0;  // this run spent getting its model (0 when shared)
  bool model_shared = false;   // taken from a sweep's ModelCache
  bool tests_acceptance = false;
  std::vector<ChainJob> jobs;
  std::vector<std::unique_ptr<sgmcmc::DrawRecorder>> recorders;
  std::vector<std::string> warnings;
  bool allow_changed_data = false;    // --allow-changed-data: resume on data other than the run began with
  bool print_zv = false;              // [output] zv = true
  std::vector<std::size_t> written;  // the parameters the draws files hold ([output] parameters)

  const std::shared_ptr<const sgmcmc::Model>& model() const { return built->model; }
  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); }
};

void PreparedRunDeleter::operator()(PreparedRun* run) const { delete run; }

namespace {

/// Loads the plugin [model] names and builds its model.
std::shared_ptr<const BuiltModel> build_model(const sgmcmc::RunConfig& config, std::uint64_t data_seed, const std::string& source,
                                              const std::optional<fs::path>& plugin_dir) {
  const std::string name = config["model"].text("name", "");
  if (name.empty()) throw sgmcmc::Error(fmt::format("{}: [model] needs a name (see `sgmcmc list`)", source));
  std::optional<sgmcmc::LoadedPlugin> plugin;
  try {
    plugin.emplace(sgmcmc::load_plugin(name, plugin_folders(plugin_dir)));
  } catch (const sgmcmc::Error& error) {
    throw ModelNotLoadable(error.what());
  }
  auto model = plugin->create({config["model"], data_seed});
  // Taken once the model has read its files, once per model (a sweep's cells share it).
  auto data_files = data_fingerprints({{"model", resolved_section(config["model"])}}, {"model"});
  return std::make_shared<const BuiltModel>(BuiltModel{*plugin, std::move(model), config["model"], std::move(data_files)});
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
                           const std::optional<fs::path>& plugin_dir, ModelCache* models) {
  PreparedRunPtr run(new PreparedRun);
  run->config = std::move(config);
  run->source = source;
  auto& cfg = run->config;
  run->schedule = read_schedule(cfg["run"]);
  resolve_preset_data_files(cfg, [&] {
    try {
      return sgmcmc::load_plugin(cfg["model"].text("name", ""), plugin_folders(plugin_dir)).path();
    } catch (const sgmcmc::Error& error) {
      throw ModelNotLoadable(error.what());
    }
  });
  run->schedule.chain.collect = sgmcmc::Collection::from_settings(cfg["run"], cfg["integrator"]);
  if (run->schedule.chain.recorded_draws() == 0)
    throw sgmcmc::Error(fmt::format("{}: no iteration after the warmup falls in a cycle's kept end with this thin "
                                    "and cycle length, so the chain would record no draws",
                                    cfg["run"].describe("collect")));
  const auto& schedule = run->schedule;

  run->built = models ? models->get(cfg, schedule.data_seed, source, plugin_dir, run->model_shared)
                      : build_model(cfg, schedule.data_seed, source, plugin_dir);
  cfg["model"].adopt_reads(run->built->section);  // the keys the model read, when another run's build read them
  run->model_name = cfg["model"].text("name", "");
  run->model_seconds = run->elapsed();
  const auto output = sgmcmc::read_output_options(cfg["output"], *run->model());
  run->print_zv = output.zv;
  run->written = output.written;

  // saga's tables of all the chains together are checked before any is allocated.
  if (const auto refusal = sgmcmc::estimator_memory_refusal(cfg["estimator"], *run->model(), schedule.chains); !refusal.empty())
    throw sgmcmc::Error(refusal);
  // Every chain gets its own parts, all built here, before any thread starts; the first is
  // measured, so that all of them are checked against the memory budget before the others exist.
  const auto make = [&](std::uint64_t k) {
    try {
      return sgmcmc::make_chain(cfg, run->model(), sgmcmc::Rng(schedule.seed, sgmcmc::chain_stream(k)));
    } catch (const sgmcmc::Error& error) {  // a refusal for want of a capability names the plugin
      throw sgmcmc::Error(fmt::format("{} (model '{}')", error.what(), run->model_name));
    }
  };
  const std::size_t before = heap_bytes_in_use();
  auto first = make(0);
  const std::size_t after = heap_bytes_in_use();
  check_chain_memory(cfg["run"], schedule.chains, after > before ? after - before : 0, run->model()->dimension());
  run->jobs.resize(schedule.chains);
  run->jobs[0].chain = std::move(first);
  for (std::uint64_t k = 1; k < schedule.chains; ++k) run->jobs[k].chain = make(k);
  run->tests_acceptance = run->jobs[0].chain->corrector().tests_acceptance();
  run->burn_in = read_burn_in(cfg, schedule.seed);
  if (run->burn_in)
    for (std::uint64_t k = 0; k < schedule.chains; ++k)
      run->jobs[k].burn_in = std::make_unique<BurnIn>(*run->burn_in, run->model(), k, cfg);
  // Read on --resume too: a chain interrupted before its first checkpoint starts again. With a
  // burn-in, that starts there, and the chain at the burn-in's end.
  const auto starts = read_start_points(cfg["run"], *run->model(), schedule.chains);
  for (std::size_t k = 0; k < starts.size(); ++k) {
    if (run->jobs[k].burn_in) run->jobs[k].burn_in->start_at(starts[k].theta);
    else run->jobs[k].chain->start_at(starts[k].theta);
    run->jobs[k].start = starts[k].origin;
  }
  // Recorders are built here too, so the [estimator] keys a `cv` recorder reads count as known.
  run->recorders.resize(schedule.chains);
  if (output.gradients != sgmcmc::GradientSource::none || output.quantities)
    for (std::uint64_t k = 0; k < schedule.chains; ++k)
      run->recorders[k] = std::make_unique<sgmcmc::DrawRecorder>(run->model(), output, cfg["estimator"],
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
    const auto alternatives = keys_of_alternatives.find(main_section_of(name));  // [burn_in.integrator] too
    for (auto& warning : settings.reject_unknown_keys(alternatives == keys_of_alternatives.end() ? std::vector<std::string>{}
                                                                                                  : alternatives->second))
      run.warnings.push_back(std::move(warning));
  }
  return run.warnings;
}

void check_run(const PreparedRun& run) {
  if (run.schedule.chain.compute_lp && !run.model()->capabilities().exact_log_likelihood)
    throw sgmcmc::Error(fmt::format("{}: model '{}' has no exact log-likelihood", run.config["run"].describe("lp"), run.model_name));
  run.jobs.front().chain->check(run.schedule.chain);
}

namespace {

/// integrator.adapt_mass: the adapted mass as d numbers (diagonal), or as d rows of d (dense).
json mass_rows(const std::vector<double>& mass, std::size_t dimension) {
  if (mass.size() != dimension * dimension || dimension == 1) return mass;
  json rows = json::array();
  for (std::size_t i = 0; i < dimension; ++i)
    rows.push_back(std::vector<double>(mass.begin() + static_cast<std::ptrdiff_t>(i * dimension),
                                       mass.begin() + static_cast<std::ptrdiff_t>((i + 1) * dimension)));
  return rows;
}

json manifest_chains(const PreparedRun& run) {
  json chains = json::array();
  for (std::size_t k = 0; k < run.jobs.size(); ++k) {
    const auto& r = run.jobs[k].result;
    const char* status = r.diverged ? "diverged" : r.stopped ? "interrupted" : "complete";
    chains.push_back({{"chain", k + 1}, {"status", status}, {"message", r.message},
                      {"iterations", r.iterations}, {"seconds", r.seconds}, {"cpu_seconds", r.cpu_seconds},
                      {"step_size", run.jobs[k].chain->integrator().step_size()},
                      {"item_gradients", r.cost.item_gradients},
                      {"full_passes", r.cost.full_passes}, {"blocks", r.blocks}, {"accepted_blocks", r.accepted_blocks},
                      {"non_finite_proposals", r.non_finite_proposals}, {"mean_accept_stat", r.mean_accept_stat},
                      {"recording_item_gradients", run.jobs[k].files->recording_cost().item_gradients},
                      {"resumed_at_iteration", run.jobs[k].resumed_at}});
    for (const auto& [name, value] : r.estimator_choices) chains.back()["estimator"][name] = value;  // e.g. cv's h_0, λ̂
    if (!run.jobs[k].start.empty()) chains.back()["start"] = run.jobs[k].start;  // run.init
    if (run.jobs[k].burn_in) chains.back()["burn_in"] = run.jobs[k].burn_in->record();
    if (!r.adapted_mass.empty()) chains.back()["adapted_mass"] = mass_rows(r.adapted_mass, run.model()->dimension());
    if (r.adapted_step_size) {  // integrator.adapt_step_size: the step frozen at the end of the warmup
      chains.back()["adapted_step_size"] = *r.adapted_step_size;
      chains.back()["step_size_frozen_after_warmup"] = true;
    }
  }
  return chains;
}

fs::path checkpoint_path(const fs::path& out, std::size_t k) { return out / run_folder::chain_checkpoint(k + 1); }

/// Builds every chain's files; with `resume`, first restores every chain that has a checkpoint
/// and checks every file it continues (all before any file is touched, so a bad checkpoint or a
/// changed file changes nothing), then removes what an interrupted run wrote last (its manifest
/// and metrics, which the resumed run writes again).
void open_chain_files(PreparedRun& run, const fs::path& out, const json& manifest, bool resume) {
  auto comments = config_comment_lines(manifest["config"]);
  comments.insert(comments.begin(), fmt::format("sgmcmc {} ({})", SGMCMC_VERSION, run.source));
  comments.push_back(run.schedule.chain.compute_lp ? "lp__ = -U(theta), up to a constant"
                                                   : std::string(run_folder::not_computed_lp_comment));
  const auto names = run.model()->parameter_names();
  const auto quantity_names = run.model()->quantity_names();
  const bool adapts = manifest["config"]["integrator"].value("adapt_mass", false) ||
                     manifest["config"]["integrator"].value("adapt_step_size", false);
  for (std::uint64_t k = 0; k < run.schedule.chains; ++k) {
    auto chain_comments = comments;
    chain_comments.push_back(fmt::format("chain = {}", k + 1));
    const auto stan = stan_argument_lines(run.schedule.chain, k + 1, run.schedule.seed, adapts);
    chain_comments.insert(chain_comments.end(), stan.begin(), stan.end());
    const ChainPaths paths{out / run_folder::chain_draws(k + 1), out / run_folder::chain_gradients(k + 1),
                           checkpoint_path(out, k), out / run_folder::chain_checkpoint_metrics(k + 1)};
    run.jobs[k].files = std::make_unique<ChainFiles>(paths, chain_comments, run.tests_acceptance, names, run.written,
                                                     std::move(run.recorders[k]), quantity_names);
  }
  for (std::uint64_t k = 0; resume && k < run.schedule.chains; ++k) {
    if (!fs::exists(checkpoint_path(out, k))) continue;  // interrupted before its first checkpoint
    auto state = sgmcmc::read_state_file(checkpoint_path(out, k));
    run.jobs[k].chain->restore_state(state);
    if (run.jobs[k].burn_in) run.jobs[k].burn_in->restore_record(state);
    run.jobs[k].files->restore_state(state);
    state.finish();
    run.jobs[k].resumed_at = run.jobs[k].chain->state().iteration;
  }
  for (const auto& job : run.jobs) job.files->check_files();
  if (resume)
    for (const char* stale : {run_folder::manifest, run_folder::metrics}) fs::remove(out / stale);
  for (auto& job : run.jobs) job.files->open();
}

/// Throws, naming each file, if a file the resumed run reads differs from the one the run began
/// with (checkpoint.json's data_files): its chains would continue on data they did not sample.
/// With --allow-changed-data, a warning (printed and in the manifest) instead.
void check_recorded_data(const PreparedRun& run, const fs::path& out, const json& data_files, json& manifest) {
  const auto changes = changed_data(read_recorded_run(out), data_files);
  if (changes.empty()) return;
  const auto what = fmt::format("{}", fmt::join(changes, "; "));
  if (!run.allow_changed_data)
    throw sgmcmc::Error(fmt::format("{}: the data differ from those the run began with ({}); its chains would not continue "
                                    "on the data they sampled. Restore the file(s), start a new run, or add "
                                    "--allow-changed-data to continue on the new data (nothing was changed)",
                                    (out / run_folder::checkpoint_record).string(), what));
  const auto warning = fmt::format("--allow-changed-data: the resumed chains continue on data other than the run began "
                                   "with ({})", what);
  fmt::print(stderr, "sgmcmc: warning: {}\n", warning);
  manifest["warnings"].push_back(warning);
}

}  // namespace

std::string resume_refusal(const fs::path& out) {
  if (!fs::is_directory(out)) return fmt::format("'{}' is not a folder", out.string());
  if (fs::exists(out / run_folder::manifest) && !interrupted_run(manifest_if_any(out)))
    return fmt::format("'{}' holds a complete run (its manifest.json is written); there is nothing to resume, and "
                       "nothing was changed",
                       out.string());
  if (!fs::exists(out / run_folder::checkpoint_record))
    return fmt::format("'{}' holds no checkpoint.json: it is not a run made with checkpoints (--checkpoint-every K or "
                       "run.checkpoint_every)",
                       out.string());
  return "";
}

RunOutcome execute_run(PreparedRun& run, const fs::path& out, unsigned threads, std::atomic<std::uint64_t>* progress,
                       bool resume) {
  json manifest = {{"sgmcmc_version", SGMCMC_VERSION},
                   {"source", run.source},
                   {"config", resolved_config(run.config)},
                   {"seed", run.schedule.seed},
                   {"warnings", run.warnings},
                   {"model", {{"name", run.model_name},
                              {"plugin", run.built->plugin.path().string()},
                              {"dimension", run.model()->dimension()},
                              {"items", run.model()->num_items()}}}};
  // θ* of data simulated from a prior draw (model.simulate_from_prior): what `sgmcmc sbc` ranks.
  if (const auto truth = run.model()->simulated_parameters(); !truth.empty()) {
    const auto names = run.model()->parameter_names();
    if (truth.size() != names.size())
      throw std::logic_error(fmt::format("model {}: simulated_parameters() has {} values for {} parameters",
                                         run.model_name, truth.size(), names.size()));
    json values = json::object();
    for (std::size_t j = 0; j < names.size(); ++j) values[names[j]] = truth[j];
    manifest["model"]["simulated_parameters"] = values;
    // What `sgmcmc sbc --quantities` ranks beside θ*: the model's quantities at θ* (a fresh
    // workspace: they keep no state across draws) and lp__ = -U(θ*) where U is exact (the same
    // function, and constant, as the draws' lp__ with run.lp = true).
    json at_truth = json::object();
    const auto workspace = run.model()->make_workspace();
    const auto quantity_names = run.model()->quantity_names();
    std::vector<double> quantities(quantity_names.size());
    if (!quantity_names.empty()) run.model()->evaluate_quantities(truth, *workspace, quantities);
    for (std::size_t q = 0; q < quantity_names.size(); ++q) at_truth[quantity_names[q]] = quantities[q];
    if (run.model()->capabilities().exact_log_likelihood)
      at_truth["lp__"] = -sgmcmc::potential(*run.model(), truth, sgmcmc::every_item(*run.model()), *workspace);
    manifest["model"]["simulated_quantities"] = at_truth;
  }
  // The columns after the parameters (Stan's generated quantities), which `summary` leads with.
  if (!run.recorders.empty() && run.recorders[0] && run.recorders[0]->quantity_count() > 0)
    manifest["model"]["quantities"] = run.model()->quantity_names();
  if (run.burn_in) manifest["burn_in"] = run.burn_in->record();
  json data_files = run.built->data_files;
  data_files.update(data_fingerprints(manifest["config"], {"run"}));  // run.init
  manifest["data_files"] = data_files;
  const bool checkpoints = run.schedule.chain.checkpoint_every > 0;
  if (resume) {
    check_recorded_run(out, manifest["config"]);
    check_recorded_data(run, out, data_files, manifest);
  } else if (checkpoints) {
    record_run(out, run.source, run.config, manifest["config"], data_files);
  }
  open_chain_files(run, out, manifest, resume);
  run_jobs(run.jobs, run.schedule.chain, threads, progress);
  for (auto& job : run.jobs)
    if (job.failure) std::rethrow_exception(job.failure);
  const auto any = [&](bool sgmcmc::ChainResult::*flag) {
    return std::any_of(run.jobs.begin(), run.jobs.end(), [&](const ChainJob& job) { return job.result.*flag; });
  };
  const bool interrupted = any(&sgmcmc::ChainResult::interrupted);
  if (!interrupted && any(&sgmcmc::ChainResult::stopped)) return RunOutcome::stopped;  // the checkpoints stay for --resume
  // Interrupted: what --resume needs (a run without checkpoints has no record yet) and, as for a
  // complete run, the metrics so far and a manifest that says so.
  if (interrupted && !checkpoints && !resume) record_run(out, run.source, run.config, manifest["config"], data_files);

  std::vector<const ChainFiles*> files;
  for (const auto& job : run.jobs) files.push_back(job.files.get());
  write_metrics(out / run_folder::metrics, run.jobs.front().chain->metric_names(run.schedule.chain), files);
  const bool any_diverged = any(&sgmcmc::ChainResult::diverged);
  manifest["status"] = interrupted ? "interrupted" : any_diverged ? "diverged" : "complete";
  manifest["chains"] = manifest_chains(run);
  manifest["threads"] = threads;
  manifest["timings"] = {{"model_seconds", run.model_seconds},
                         {"model_shared", run.model_shared},
                         {"total_seconds", run.elapsed()},
                         {"started", seconds_since_epoch(run.started_at)},
                         {"finished", seconds_since_epoch(std::chrono::system_clock::now())},
                         {"host", run_folder::host_name()}};
  write_atomically(out / run_folder::manifest, manifest.dump(2) + "\n");
  if (interrupted) return RunOutcome::interrupted;  // the checkpoints stay for --resume
  // Complete: the checkpoints go, whether run.checkpoint_every or an interruption wrote them.
  std::error_code absent;
  for (std::size_t k = 0; k < run.jobs.size(); ++k) {
    fs::remove(checkpoint_path(out, k), absent);
    fs::remove(out / run_folder::chain_checkpoint_metrics(k + 1), absent);
  }
  return any_diverged ? RunOutcome::diverged : RunOutcome::complete;
}

namespace {

/// `text` as one word for a POSIX shell: as it is when that is safe, else in single quotes.
std::string shell_word(const std::string& text) {
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("_-+=.,:/@%").find(c) != std::string_view::npos;
  });
  if (plain) return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

/// The command that continues the run in `out`, with the plugin folder it was given.
std::string resume_command(const RunOptions& options, const fs::path& out) {
  std::string command = "sgmcmc run --resume " + shell_word(out.string());
  if (options.plugin_dir) command += " --plugin-dir " + shell_word(options.plugin_dir->string());
  return command;
}

}  // namespace

int run_command(const RunOptions& options) {
  if (options.resume)
    if (const auto refusal = resume_refusal(*options.resume); !refusal.empty()) throw sgmcmc::Error("--resume: " + refusal);
  auto [config, label, source] = load_run_config(options);
  // A resumed run keeps the first run's source: chains that restart write the same headers.
  if (options.resume) source = read_recorded_run(*options.resume).value("source", source);
  const auto run = prepare_run(std::move(config), source, options.plugin_dir);
  run->allow_changed_data = options.allow_changed_data;
  for (const auto& warning : check_keys(*run)) fmt::print(stderr, "sgmcmc: warning: {}\n", warning);
  run->schedule.chain.stop_after = options.stop_after;
  check_run(*run);
  const auto& schedule = run->schedule;
  const auto& jobs = run->jobs;

  const fs::path out = options.resume ? *options.resume : create_output(options, label);
  const RunFolderLock lock(out);
  if (options.resume) {  // again under the lock: the run may have completed since
    if (const auto refusal = resume_refusal(out); !refusal.empty()) throw sgmcmc::Error("--resume: " + refusal);
  } else {
    remove_run_files(out);
  }
  const unsigned threads = options.threads ? options.threads
                                           : static_cast<unsigned>(std::min<std::uint64_t>(
                                                 schedule.chains, std::max(1u, std::thread::hardware_concurrency())));
  std::atomic<std::uint64_t> progress{0};
  RunOutcome outcome;
  {
    const std::uint64_t burn_in = run->burn_in ? run->burn_in->iterations : 0;
    ProgressBar bar(schedule.chains * (burn_in + schedule.chain.warmup + schedule.chain.iterations), progress, !options.quiet);
    // From here on Ctrl-C stops the chains with a checkpoint; before, there is nothing to keep.
    catch_interruptions();
    run->schedule.chain.stop_requested = &stop_requested();
    outcome = execute_run(*run, out, threads, &progress, options.resume.has_value());
    stop_catching_interruptions();
  }
  if (outcome == RunOutcome::stopped) {
    fmt::print(stderr, "sgmcmc: stopped after iteration {} (--stop-after); continue with: {}\n", options.stop_after,
               resume_command(options, out));
    return 0;
  }
  if (outcome == RunOutcome::interrupted) {
    std::vector<std::string> chains;
    for (std::size_t k = 0; k < jobs.size(); ++k)
      chains.push_back(fmt::format("chain {} {} {}", k + 1, jobs[k].result.stopped ? "at iteration" : "complete,",
                                   jobs[k].result.iterations));
    fmt::print(stderr,
               "sgmcmc: interrupted ({}): {}; the checkpoints, metrics.csv and manifest.json (status \"interrupted\") "
               "are in {}; continue with: {}\n",
               interruption_name(), fmt::join(chains, ", "), out.string(), resume_command(options, out));
    return exit_interrupted;
  }
  const bool any_diverged = outcome == RunOutcome::diverged;
  for (std::size_t k = 0; k < jobs.size(); ++k) {
    const auto& r = jobs[k].result;
    if (r.diverged)
      fmt::print(stderr, "sgmcmc: chain {} {}; its draws until then are in {}\n", k + 1, r.message, run_folder::chain_draws(k + 1));
    if (r.non_finite_proposals)
      fmt::print(stderr, "sgmcmc: chain {}: {} proposal(s) with a non-finite potential or energy error were rejected\n",
                 k + 1, r.non_finite_proposals);
  }
  if (!options.quiet) {
    fmt::print("{} chain(s) of {} + {} iterations (warmup + recorded), model '{}' (d = {}, N = {}), in {:.2f} s -> {}\n", schedule.chains,
               schedule.chain.warmup, schedule.chain.iterations, run->model_name, run->model()->dimension(), run->model()->num_items(), run->elapsed(), out.string());
    const auto metric_names = run->model()->metric_names();
    for (std::size_t k = 0; k < jobs.size(); ++k) {
      std::string last;
      if (!jobs[k].files->rows().empty())
        for (std::size_t m = 0; m < metric_names.size(); ++m)
          last += fmt::format(", {} {:.4f}", metric_names[m], jobs[k].files->rows().back().values[m]);
      if (run->tests_acceptance)
        last += fmt::format(", acceptance rate {:.3f}", static_cast<double>(jobs[k].result.accepted_blocks) /
                                                           static_cast<double>(std::max<std::uint64_t>(1, jobs[k].result.blocks)));
      fmt::print("  chain {}: {} item gradients{}\n", k + 1, jobs[k].result.cost.item_gradients, last);
    }
    if (schedule.chain.recorded_draws() >= 4) {
      fmt::print("\n");
      try {  // as for zv below: the run's files are complete; a refusal (no draws) does not fail it
        summary_command(out, {}, 20);
      } catch (const sgmcmc::Error& error) {
        fmt::print(stderr, "sgmcmc: no summary: {}\n", error.what());
      }
    }
  }
  if (run->print_zv) {  // asked for explicitly, so printed even with --quiet
    fmt::print("\n");
    try {  // the run's files are complete: a ZV refusal (too few draws) does not fail the run
      zv_command(out, {});
    } catch (const sgmcmc::Error& error) {
      fmt::print(stderr, "sgmcmc: {} (the run itself is complete)\n", error.what());
    }
  }
  return any_diverged ? exit_diverged : 0;
}

Command add_run_command(CLI::App& app) {
  const auto run = std::make_shared<RunOptions>();
  auto* command = app.add_subcommand("run", "run chains from a preset or a TOML configuration");
  command->footer("Example: sgmcmc run --preset demo --seed 1 --set run.iterations=2000 --out runs/demo");
  add_configuration_options(*command, run->preset, run->config_file, run->overrides);
  command->add_option("--seed", run->seed, "run.seed")->check(at_least_zero);
  command->add_option("--chains", run->chains, "run.chains")->check(at_least_one);
  command->add_option("--threads", run->threads, "threads running chains (default: one per chain, at most the cores)")
      ->check(at_least_zero);
  command->add_option("--out", run->out, "output folder (default: runs/<preset or config>-<time>)");
  command->add_flag("--replace", run->replace, "replace the output folder's files if it is not empty");
  command->add_flag("--quiet", run->quiet, "no progress bar, no summary");
  command->add_option("--plugin-dir", run->plugin_dir, "search this folder for model plugins first");
  command->add_option("--checkpoint-every", run->checkpoint_every,
                      "run.checkpoint_every: save every chain's state every K iterations, for --resume")
      ->check(at_least_zero);
  command->add_option("--stop-after", run->stop_after,
                      "stop every chain after iteration K's checkpoint (K a multiple of the checkpoint interval)");
  auto* resume = command->add_option("--resume", run->resume, "continue the interrupted run in this folder from its checkpoints");
  resume->excludes("--out")->excludes("--replace");
  command->add_flag("--allow-changed-data", run->allow_changed_data,
                    "with --resume: continue even though a data file differs from the one the run began with")
      ->needs(resume);
  return {command, [run] {
            if (!run->preset && !run->config_file && !run->resume)
              throw sgmcmc::Error("sgmcmc run: give --preset NAME, --config FILE.toml or --resume DIR");
            return run_command(*run);
          }};
}
