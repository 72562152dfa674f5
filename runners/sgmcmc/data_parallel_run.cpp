// run.data_parallel's side of the runner (see data_parallel_run.hpp).
#include "data_parallel_run.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>
#include <unistd.h>
#include <fmt/format.h>

#include "commands.hpp"
#include "run_folder.hpp"
#include "run_record.hpp"

import sgmcmc;

namespace fs = std::filesystem;

bool wants_data_parallel(const sgmcmc::RunConfig& config) {
  // [run]'s table, as prepare_run reads it; a probe, whose reads are not the run's.
  return sgmcmc::read_fields(sgmcmc::run_fields(), sgmcmc::SectionReader(config["run"])).data_parallel;
}

void ClusterRanks::all_gather(std::span<const double> mine, std::span<double> all) {
  if (setting_up) {
    const double fine = 0.0;
    std::vector<double> codes(size());
    cluster_.all_gather(&fine, 1, codes.data());
    if (std::any_of(codes.begin(), codes.end(), [](double code) { return code != 0; })) {
      failed_codes = std::move(codes);
      throw sgmcmc::Error("another rank's set-up failed");  // that rank says why
    }
  }
  const auto start = std::chrono::steady_clock::now();
  if (!signalled) {
    cluster_.all_gather(mine.data(), mine.size(), all.data());
  } else {  // each rank's flag after its part; every rank reads the same flags, so all stop together
    const std::size_t m = mine.size();
    std::vector<double> sent(mine.begin(), mine.end()), received((m + 1) * size());
    sent.push_back(signalled->load(std::memory_order_relaxed) ? 1.0 : 0.0);
    cluster_.all_gather(sent.data(), m + 1, received.data());
    for (std::size_t r = 0; r < size(); ++r) {
      std::copy_n(received.begin() + static_cast<std::ptrdiff_t>(r * (m + 1)), m, all.begin() + static_cast<std::ptrdiff_t>(r * m));
      if (received[r * (m + 1) + m] != 0) stop.store(true, std::memory_order_relaxed);
    }
  }
  seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  gathers += 1;
  bytes += (all.size() + (signalled ? size() : 0)) * sizeof(double);  // the parts (and flags) of every rank
}

DataParallelJob::DataParallelJob(const sgmcmc::Settings& run) {
  if (!cluster_.launched())
    throw sgmcmc::Error(fmt::format(
        "{}: a data-parallel run splits one chain's data across the ranks of an MPI job, and no MPI launcher started "
        "this process{}; start it as `mpirun -n P sgmcmc run ...` (P = 1 is allowed), or set run.data_parallel = false",
        run.describe("data_parallel"),
        Cluster::built_with_mpi() ? "" : " (and this sgmcmc was built without MPI; third_party/setup.sh installs OpenMPI)"));
  ranks_ = std::make_shared<ClusterRanks>(cluster_);
}

const std::atomic<bool>& DataParallelJob::stop_together(const std::atomic<bool>& signalled) const {
  ranks_->signalled = &signalled;
  return ranks_->stop;
}

namespace {

/// The exit code report_error gives `failure`, without printing.
int exit_code_of(const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const sgmcmc::Error&) {
    return exit_bad_input;
  } catch (const fs::filesystem_error&) {
    return exit_bad_input;
  } catch (...) {
    return exit_internal_error;
  }
}

}  // namespace

int DataParallelJob::agree(const std::function<void()>& step) const {
  std::exception_ptr failure;
  ranks_->setting_up = true;
  ranks_->failed_codes.clear();
  try {
    step();
  } catch (...) {
    failure = std::current_exception();
  }
  ranks_->setting_up = false;
  if (!ranks_->failed_codes.empty()) {  // exchanged already, in a gather the model asked for: another rank speaks
    const auto& codes = ranks_->failed_codes;
    return static_cast<int>(codes[0] != 0 ? codes[0] : *std::max_element(codes.begin(), codes.end()));
  }
  const double mine = failure ? exit_code_of(failure) : 0;
  std::vector<double> codes(static_cast<std::size_t>(cluster_.size()));
  cluster_.all_gather(&mine, 1, codes.data());
  if (std::all_of(codes.begin(), codes.end(), [](double code) { return code == 0; })) return 0;
  // Rank 0 speaks for all when it failed (a refusal of the configuration fails every rank alike).
  if (failure && (root() || codes[0] == 0)) {
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& error) {
      report_error(error, root() ? "" : where());
    } catch (...) {
      fmt::print(stderr, "sgmcmc: internal error{}: an exception of an unknown type\n", where());
    }
  }
  return static_cast<int>(codes[0] != 0 ? codes[0] : *std::max_element(codes.begin(), codes.end()));
}

std::string DataParallelJob::where() const {
  return cluster_.size() > 1 ? fmt::format(" on rank {}", cluster_.rank()) : "";
}

fs::path DataParallelJob::scratch() const {
  const fs::path folder = fs::temp_directory_path() / fmt::format("sgmcmc-run-{}-rank-{}", getpid(), cluster_.rank());
  fs::create_directories(folder);
  return folder;
}

std::vector<std::size_t> DataParallelJob::gather_rows(std::size_t held) const {
  const double mine = static_cast<double>(held);  // exact below 2^53 rows
  std::vector<double> all(static_cast<std::size_t>(cluster_.size()));
  cluster_.all_gather(&mine, 1, all.data());
  return {all.begin(), all.end()};
}

nlohmann::json DataParallelJob::record(std::size_t items, const std::vector<std::size_t>& rows_per_rank,
                                       std::uint64_t iterations) const {
  const auto ranks = static_cast<std::size_t>(cluster_.size());
  const auto per = [&](double total) { return total / static_cast<double>(std::max<std::uint64_t>(iterations, 1)); };
  return {{"ranks", ranks},
          {"items", items},
          {"rows_per_rank", rows_per_rank},
          {"reductions", ranks_->gathers},
          {"bytes", ranks_->bytes},
          {"communication_seconds", ranks_->seconds},
          {"iterations", iterations},
          {"reductions_per_iteration", per(static_cast<double>(ranks_->gathers))},
          {"bytes_per_iteration", per(static_cast<double>(ranks_->bytes))},
          {"communication_seconds_per_iteration", per(ranks_->seconds)}};
}

namespace {

/// "`value` is not yet supported with run.data_parallel (why)", after where the key was set.
[[noreturn]] void not_supported(const sgmcmc::Settings& section, const std::string& key, const std::string& value,
                                const std::string& why) {
  throw sgmcmc::Error(fmt::format("{}: {} is not yet supported with run.data_parallel ({})", section.describe(key),
                                  value, why));
}

}  // namespace

void check_data_parallel(sgmcmc::ConfigReader read, const sgmcmc::RunSchedule& schedule, const sgmcmc::Model& model,
                         bool have_ranks) {
  const sgmcmc::RunConfig& config = read.config();
  const auto& run = config["run"];
  if (!have_ranks)
    throw sgmcmc::Error(fmt::format("{}: a data-parallel chain is `mpirun -n P sgmcmc run`'s alone; sweep, sbc and tune "
                                    "run whole chains on each rank (remove the key)",
                                    run.describe("data_parallel")));
  if (schedule.chains > 1)
    not_supported(run, "chains", std::to_string(schedule.chains) + " chains",
                  "a data-parallel run is one chain on every rank; run several jobs for several chains");
  const auto& estimator = config["estimator"];
  const std::string name = read["estimator"].text("name", sgmcmc::default_estimator);
  if (name == "saga" && !model.capabilities().glm_gradients)
    not_supported(estimator, "name", "'saga' on a model without the glm-gradients capability",
                  "each rank keeps its block of saga's table in the GLM form (one scalar per item); a table of per-item "
                  "gradient vectors would cost one collective per item and be held whole on every rank");
  if (schedule.chain.float_precision)
    not_supported(run, "chain_precision", "the float chain", "the model's float gradient is not split across ranks");
  for (const auto& [section, settings] : config.sections)
    if ((section == "burn_in" || section.starts_with("burn_in.")) && !settings.entries().empty())
      throw sgmcmc::Error(fmt::format("[{}]: a burn-in is not yet supported with run.data_parallel (stage 1 runs one "
                                      "sampler); remove the section",
                                      section));
}

void copy_run_for_worker(const fs::path& folder, const fs::path& scratch) {
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.is_regular_file() && entry.path().filename() != run_folder::lock)  // rank 0's lock is its own
      fs::copy_file(entry.path(), scratch / entry.path().filename(), fs::copy_options::overwrite_existing);
}

nlohmann::json data_parallel_checkpoint_record(std::size_t ranks) { return {{"ranks", ranks}}; }

void check_resumed_ranks(const fs::path& folder, std::size_t ranks) {
  const auto recorded = read_recorded_run(folder);
  const auto path = (folder / run_folder::checkpoint_record).string();
  const auto saved = recorded.contains("data_parallel") ? recorded["data_parallel"].value("ranks", std::size_t{0}) : 0;
  if (saved == ranks) return;
  if (saved == 0)
    throw sgmcmc::Error(fmt::format("{}: the run was not checkpointed by a data-parallel job (no data_parallel.ranks); "
                                    "resume it as it was run (nothing was changed)",
                                    path));
  const auto counts = fmt::format("data_parallel.ranks = {}: the run was checkpointed by a job of {} ranks, and this job "
                                  "has {}",
                                  saved, saved, ranks);
  throw sgmcmc::Error(fmt::format("{}: {}; with another rank count each batch's partial sums are added in another order, "
                                  "so the chain would not continue bit for bit. Resume with `mpirun -n {}` (nothing "
                                  "was changed)",
                                  path, counts, std::to_string(saved)));
}
