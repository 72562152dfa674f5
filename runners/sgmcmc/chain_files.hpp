// The files a run's chains write (named in run_folder.hpp): each chain's Stan CSV draws, its
// gradients CSV and its checkpoint, as the chain runs; metrics.csv of every chain once they end.
#pragma once
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

import sgmcmc;

/// gradients-<k>.csv: `#` comment lines, the header grad_lp.<parameter>,..., then one row per
/// draw of chain-<k>.csv, in the same order: z = ∇log π at that draw.
class GradientFile {
public:
  GradientFile(const std::filesystem::path& path, const std::vector<std::string>& comments,
               const std::vector<std::string>& names);
  /// Continues the file after its first `keep.length` bytes.
  GradientFile(const std::filesystem::path& path, sgmcmc::FileMark keep) : file_(path, keep) {}
  sgmcmc::FileMark flush() { return file_.flush(); }
  void write(std::span<const double> score);
  void close() { file_.close(); }

private:
  sgmcmc::OutputFile file_;
  std::string line_;
};

/// Where chain k's files go.
struct ChainPaths {
  std::filesystem::path draws, gradients, checkpoint, checkpoint_metrics;
};

/// One chain's output: draws of the parameters chosen by [output] (and the model's quantities,
/// when recorded, as generated-quantity columns after them) streamed to its Stan CSV, their
/// gradients to gradients-<k>.csv, metric rows kept for metrics.csv. At a checkpoint it appends
/// the metric rows since the last one to checkpoint-<k>-metrics.bin, adds where its files stand
/// and its recorder to the chain's state and writes it into the older of checkpoint-<k>.bin's two
/// slots, in place (sgmcmc::CheckpointFile): what a checkpoint writes does not grow with the run.
class ChainFiles final : public sgmcmc::ChainObserver {
public:
  /// `names`: all the model's parameters; `written`: the indices of those the files hold.
  ChainFiles(ChainPaths paths, std::vector<std::string> comments, bool tests_acceptance,
             const std::vector<std::string>& names, std::vector<std::size_t> written,
             std::unique_ptr<sgmcmc::DrawRecorder> recorder, const std::vector<std::string>& quantity_names);
  /// Reads what on_checkpoint added to a chain's state; open() then continues the files there.
  void restore_state(sgmcmc::StateReader& in);
  /// After restore_state: throws, naming the file, unless each file is still as long as the
  /// checkpoint recorded and its bytes up to there are unchanged (their CRC-32); then reads the
  /// metric rows up to the checkpoint. Changes no file, so that a refused resume leaves every
  /// chain's files as they were.
  void check_files();
  /// New files with comments and headers, or, after restore_state, the files cut to where the
  /// checkpoint left them (an interrupted run may have written beyond it) and continued.
  void open();
  /// Work before the chain's first iteration (a `cv` recorder's centring), in the chain's thread.
  /// Its errors name the [estimator] keys it reads, so they say whose centring failed. A
  /// recorder restored from a checkpoint has done it. Throws sgmcmc::StopRequested when
  /// `stop_requested` is set during the centring (Ctrl-C or SIGTERM).
  void prepare(const std::atomic<bool>* stop_requested);
  void on_draw(const sgmcmc::Draw& draw) override;
  void on_metrics(const sgmcmc::MetricsRow& row) override;
  /// The files are flushed first, so the lengths saved are what is on disk.
  void on_checkpoint(std::uint64_t, sgmcmc::StateWriter& state) override;
  /// Ends the files; unless the chain stopped to be resumed, the draws end with Stan's "Elapsed
  /// Time" lines (warmup and sampling seconds of `result`).
  void close(const sgmcmc::ChainResult& result);
  sgmcmc::Cost recording_cost() const { return recorder_ ? recorder_->cost() : sgmcmc::Cost{}; }
  struct Row {
    std::uint64_t iteration;
    double seconds, cpu_seconds;
    sgmcmc::Cost cost;
    std::vector<double> values;
  };
  const std::vector<Row>& rows() const { return rows_; }

private:
  bool records_gradients() const { return recorder_ && recorder_->records_gradients(); }
  bool writes_every_parameter() const { return written_.size() == dimension_; }
  /// row_ ← the written coordinates of `values`, followed by `quantities` slots.
  std::span<double> gather(std::span<const double> values, std::size_t quantities);

  /// Appends the rows not yet in checkpoint-<k>-metrics.bin; returns where the file then stands.
  sgmcmc::FileMark append_metric_rows();

  struct Lengths {
    sgmcmc::FileMark draws, gradients;  // chain-<k>.csv and gradients-<k>.csv at the checkpoint
    sgmcmc::FileMark metrics;           // checkpoint-<k>-metrics.bin, holding `rows` rows
    std::uint64_t rows = 0;
  };
  ChainPaths paths_;
  std::vector<std::string> comments_;
  bool tests_acceptance_;
  std::size_t dimension_;
  std::vector<std::size_t> written_;
  std::vector<std::string> written_names_, quantity_names_;
  std::unique_ptr<sgmcmc::DrawRecorder> recorder_;
  std::optional<Lengths> continue_at_;
  std::optional<sgmcmc::StanCsvWriter> draws_;
  std::optional<GradientFile> gradients_;
  std::optional<sgmcmc::OutputFile> metrics_file_;  // opened at the first checkpoint
  std::optional<sgmcmc::CheckpointFile> checkpoint_file_;  // made at the first checkpoint
  std::size_t rows_in_file_ = 0;
  std::vector<double> row_, score_;
  std::vector<Row> rows_;
};

/// The argument lines CmdStan writes at the top of its CSV, with this run's values under Stan's
/// names (num_samples = run.iterations, num_warmup = run.warmup, thin, id = chain k, seed), so that
/// Stan's readers (rstan::read_stan_csv) know how many draws to expect; `adapt engaged` is 1 when
/// the warmup adapts something (integrator.adapt_mass).
std::vector<std::string> stan_argument_lines(const sgmcmc::ChainSchedule& schedule, std::uint64_t k, std::uint64_t seed,
                                             bool adapts);

/// metrics.csv: chain, iteration, seconds, cpu_seconds, item_gradients, then the columns `names`
/// (Chain::metric_names: the model's metrics, then the temperatures with run.temperatures, then the
/// acceptance rates with an MH corrector);
/// the rows of chain 1, then of chain 2, and so on.
void write_metrics(const std::filesystem::path& path, const std::vector<std::string>& names,
                   const std::vector<const ChainFiles*>& chains);
