// The files a run's chains write (see chain_files.hpp).
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "chain_files.hpp"

import sgmcmc;

namespace fs = std::filesystem;

namespace {

/// Stan's sampler columns, plus the MH block's ΔH̃ and decision when there is an MH test.
std::vector<std::string> sampler_columns(bool tests_acceptance) {
  std::vector<std::string> columns{"lp__", "accept_stat__", "stepsize__"};
  if (tests_acceptance) columns.insert(columns.end(), {"delta_energy__", "accepted__"});
  return columns;
}

/// The part of a chain's checkpoint ChainFiles writes. Named anew when its layout changed (the
/// metric rows moved to checkpoint-<k>-metrics.bin), so that a checkpoint of the former layout
/// is refused, naming both, rather than misread.
constexpr const char* state_section = "chain files, metric rows appended";

/// One metric row as the checkpoint's metrics file holds it: the values of a double exactly, so
/// that a resumed run's metrics.csv is the uninterrupted run's.
void save_row(const ChainFiles::Row& row, sgmcmc::StateWriter& out) {
  out.count(row.iteration);
  out.number(row.seconds);
  out.number(row.cpu_seconds);
  out.count(row.cost.item_gradients);
  out.count(row.cost.full_passes);
  out.numbers(row.values);
}

ChainFiles::Row restore_row(sgmcmc::StateReader& in) {
  ChainFiles::Row row;
  row.iteration = in.count();
  row.seconds = in.number();
  row.cpu_seconds = in.number();
  row.cost.item_gradients = in.count();
  row.cost.full_passes = in.count();
  row.values = in.numbers();
  return row;
}

/// The first `length` bytes of `path` (checked by check_file_prefix before).
std::string file_prefix(const fs::path& path, std::uint64_t length) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes(length, '\0');
  if (!in.read(bytes.data(), static_cast<std::streamsize>(length)))
    throw sgmcmc::Error(fmt::format("{}: cannot read its first {} bytes", path.string(), length));
  return bytes;
}

}  // namespace

GradientFile::GradientFile(const fs::path& path, const std::vector<std::string>& comments, const std::vector<std::string>& names)
    : file_(path) {
  for (const auto& comment : comments) file_.write(fmt::format("# {}\n", comment));
  file_.write(fmt::format("{}\n", fmt::join(sgmcmc::gradient_column_names(names), ",")));
}

void GradientFile::write(std::span<const double> score) {
  line_.clear();
  for (double value : score) {
    if (!line_.empty()) line_ += ',';
    sgmcmc::append_number(line_, value);
  }
  file_.write(line_ + "\n");
}

ChainFiles::ChainFiles(ChainPaths paths, std::vector<std::string> comments, bool tests_acceptance,
                       const std::vector<std::string>& names, std::vector<std::size_t> written,
                       std::unique_ptr<sgmcmc::DrawRecorder> recorder, const std::vector<std::string>& quantity_names)
    : paths_(std::move(paths)), comments_(std::move(comments)), tests_acceptance_(tests_acceptance),
      dimension_(names.size()), written_(std::move(written)), recorder_(std::move(recorder)) {
  for (std::size_t i : written_) written_names_.push_back(names[i]);
  if (recorder_ && recorder_->quantity_count()) quantity_names_ = quantity_names;
  if (records_gradients()) score_.resize(dimension_);
  row_.resize(written_.size() + quantity_names_.size());
}

void ChainFiles::restore_state(sgmcmc::StateReader& in) {
  in.section(state_section);
  const auto mark = [&in] {
    const std::uint64_t length = in.count();
    return sgmcmc::FileMark{length, static_cast<std::uint32_t>(in.count())};
  };
  const auto draws = mark();
  const auto gradients = mark();
  const std::uint64_t rows = in.count();
  continue_at_ = Lengths{draws, gradients, mark(), rows};
  if (recorder_) recorder_->restore_state(in);
}

void ChainFiles::check_files() {
  if (!continue_at_) return;
  try {
    sgmcmc::check_file_prefix(paths_.draws, continue_at_->draws);
    if (records_gradients()) sgmcmc::check_file_prefix(paths_.gradients, continue_at_->gradients);
    sgmcmc::check_file_prefix(paths_.checkpoint_metrics, continue_at_->metrics);
  } catch (const sgmcmc::Error& error) {
    throw sgmcmc::Error(fmt::format("{}; this chain cannot continue from {} (delete it to run the chain again; nothing "
                                    "was changed)",
                                    error.what(), paths_.checkpoint.filename().string()));
  }
  sgmcmc::StateReader in(file_prefix(paths_.checkpoint_metrics, continue_at_->metrics.length),
                         paths_.checkpoint_metrics.string());
  rows_.clear();
  for (std::uint64_t r = 0; r < continue_at_->rows; ++r) rows_.push_back(restore_row(in));
  in.finish();
}

void ChainFiles::open() {
  if (continue_at_) {
    draws_.emplace(paths_.draws, continue_at_->draws);
    if (records_gradients()) gradients_.emplace(paths_.gradients, continue_at_->gradients);
    metrics_file_.emplace(paths_.checkpoint_metrics, continue_at_->metrics);
    rows_in_file_ = rows_.size();
    return;
  }
  auto columns = written_names_;
  columns.insert(columns.end(), quantity_names_.begin(), quantity_names_.end());
  draws_.emplace(paths_.draws, comments_, sampler_columns(tests_acceptance_), columns);
  if (records_gradients()) {
    auto gradient_comments = comments_;
    gradient_comments.push_back("grad_lp.<parameter> = d log pi / d parameter = -dU/d parameter at the draw of the same row "
                                "of chain-<k>.csv");
    gradients_.emplace(paths_.gradients, gradient_comments, written_names_);
  }
}

void ChainFiles::prepare(const std::atomic<bool>* stop_requested) {
  if (!recorder_ || continue_at_) return;
  try {
    recorder_->prepare(stop_requested);
  } catch (const sgmcmc::Error& error) {
    throw sgmcmc::Error(fmt::format("the gradient recorder (output.gradients): {}", error.what()));
  }
}

std::span<double> ChainFiles::gather(std::span<const double> values, std::size_t quantities) {
  for (std::size_t j = 0; j < written_.size(); ++j) row_[j] = values[written_[j]];
  return std::span(row_).first(written_.size() + quantities);
}

void ChainFiles::on_draw(const sgmcmc::Draw& draw) {
  const double all[] = {draw.lp, draw.decision.accept_stat, draw.step_size, draw.decision.delta_energy,
                        draw.decision.accepted ? 1.0 : 0.0};
  const std::span sampler(all, tests_acceptance_ ? 5 : 3);
  if (!recorder_ && writes_every_parameter()) return draws_->write_draw(sampler, draw.theta);  // no copy
  if (recorder_) recorder_->follow(draw.workspace, draw.target_changes, draw.data_changes, draw.theta);
  const auto row = gather(draw.theta, quantity_names_.size());
  if (!quantity_names_.empty()) recorder_->quantities(draw.theta, row.subspan(written_.size()));
  draws_->write_draw(sampler, row);
  if (gradients_) {
    recorder_->score(draw.theta, draw.iteration, score_);
    gradients_->write(gather(score_, 0));
  }
}

void ChainFiles::on_metrics(const sgmcmc::MetricsRow& row) {
  rows_.push_back({row.iteration, row.seconds, row.cpu_seconds, row.cost, {row.values.begin(), row.values.end()}});
}

void ChainFiles::on_checkpoint(std::uint64_t, sgmcmc::StateWriter& state) {
  state.section(state_section);
  for (const auto mark : {draws_->flush(), gradients_ ? gradients_->flush() : sgmcmc::FileMark{}}) {
    state.count(mark.length);
    state.count(mark.crc);
  }
  state.count(rows_.size());
  const auto metrics = append_metric_rows();
  state.count(metrics.length);
  state.count(metrics.crc);
  if (recorder_) recorder_->save_state(state);
  if (!checkpoint_file_) checkpoint_file_.emplace(paths_.checkpoint);
  checkpoint_file_->write(state);
}

sgmcmc::FileMark ChainFiles::append_metric_rows() {
  if (!metrics_file_) metrics_file_.emplace(paths_.checkpoint_metrics);
  sgmcmc::StateWriter rows;
  for (; rows_in_file_ < rows_.size(); ++rows_in_file_) save_row(rows_[rows_in_file_], rows);
  metrics_file_->write(rows.bytes());
  return metrics_file_->flush();
}

void ChainFiles::close(const sgmcmc::ChainResult& result) {
  if (!result.stopped) {
    // CmdStan's layout and fixed notation: rstan reads the digits of these lines only.
    draws_->write_comment("");
    draws_->write_comment(fmt::format(" Elapsed Time: {:.6f} seconds (Warm-up)", result.warmup_seconds));
    draws_->write_comment(fmt::format("               {:.6f} seconds (Sampling)", result.seconds - result.warmup_seconds));
    draws_->write_comment(fmt::format("               {:.6f} seconds (Total)", result.seconds));
  }
  draws_->close();
  if (gradients_) gradients_->close();
  if (metrics_file_) metrics_file_->close();
}

void write_metrics(const fs::path& path, const std::vector<std::string>& names, const std::vector<const ChainFiles*>& chains) {
  sgmcmc::OutputFile file(path);
  std::string line = "chain,iteration,seconds,cpu_seconds,item_gradients";
  for (const auto& name : names) line += "," + name;
  file.write(line + "\n");
  for (std::size_t k = 0; k < chains.size(); ++k) {
    for (const auto& row : chains[k]->rows()) {
      line = fmt::format("{},{},{},{},{}", k + 1, row.iteration, row.seconds, row.cpu_seconds, row.cost.item_gradients);
      for (double value : row.values) {
        line += ',';
        sgmcmc::append_number(line, value);
      }
      file.write(line + "\n");
    }
  }
  file.close();
}

std::vector<std::string> stan_argument_lines(const sgmcmc::ChainSchedule& schedule, std::uint64_t k, std::uint64_t seed,
                                             bool adapts) {
  return {"method = sample",
          "  sample",
          fmt::format("    num_samples = {}", schedule.iterations),
          fmt::format("    num_warmup = {}", schedule.warmup),
          "    save_warmup = 0",
          fmt::format("    thin = {}", schedule.thin),
          "    adapt",
          fmt::format("      engaged = {}", adapts ? 1 : 0),
          "    algorithm = sgmcmc",
          fmt::format("id = {}", k),
          "random",
          fmt::format("  seed = {}", seed)};
}
