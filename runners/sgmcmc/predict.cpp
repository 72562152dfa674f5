// `sgmcmc predict RUN --data FILE`: the posterior predictive of a run's recorded draws (every
// chain's chain-<k>.csv, which hold the draws after the warmup) on the rows of FILE, as CSV. The
// model is rebuilt from the [model] section the run's manifest.json recorded, with the run's data
// seed, and reads FILE with its own reader (Model::read_prediction_rows). Per row:
//   class probabilities   p̄_c = (1/S) Σ_s p(y = c | x, θ_s)
//   mean and sd           m̄ = (1/S) Σ_s m_s,  v̄ = (1/S) Σ_s (v_s + m_s²) - m̄²  (the mixture over draws)
// With labels in FILE, the held-out log predictive density (1/J) Σ_j log[(1/S) Σ_s p(y_j | x_j, θ_s)]
// and the accuracy (classes) or the root mean squared error of m̄ (a mean) go to stderr.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "configuration.hpp"
#include "run_folder.hpp"

import sgmcmc;

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct PredictOptions {
  fs::path folder;
  fs::path data;
  std::optional<fs::path> out, per_draw;
  std::optional<fs::path> plugin_dir;
};

/// The run's [model] section and data seed, from its manifest.json.
struct RecordedModel {
  sgmcmc::RunConfig config;
  std::uint64_t data_seed = 0;
};

RecordedModel recorded_model(const fs::path& folder) {
  if (!fs::is_directory(folder))
    throw sgmcmc::Error(fmt::format("predict: '{}' is not a run folder (no such directory)", folder.string()));
  const json manifest = manifest_if_any(folder);
  const fs::path path = folder / run_folder::manifest;
  if (!manifest.is_object() || !manifest.contains("config") || !manifest["config"].contains("model"))
    throw sgmcmc::Error(fmt::format("predict: '{}' is missing or has no config.model: predict needs a finished run's "
                                    "manifest to rebuild its model",
                                    path.string()));
  // JSON's numbers, booleans, strings and arrays of them are TOML values as written.
  std::string toml = "[model]\n";
  for (const auto& [key, value] : manifest["config"]["model"].items()) toml += fmt::format("{} = {}\n", key, value.dump());
  RecordedModel recorded{sgmcmc::parse_config(toml, path.string() + " [model]")};
  const json& run = manifest["config"].value("run", json::object());
  const json seed = run.contains("data_seed") ? run["data_seed"] : run.value("seed", json(0));
  recorded.data_seed = seed.is_number_unsigned() || seed.is_number_integer() ? seed.get<std::uint64_t>() : 0;
  return recorded;
}

/// θ's coordinates in the chain files' columns; every parameter must be there.
std::vector<std::size_t> parameter_columns(const Chains& chains, const std::vector<std::string>& names) {
  std::vector<std::size_t> columns;
  for (const auto& name : names) {
    const auto found = std::find(chains.columns.begin(), chains.columns.end(), name);
    if (found == chains.columns.end())
      throw sgmcmc::Error(fmt::format("predict: {} has no column '{}' (an [output] parameters choice?): predict needs "
                                      "every parameter of the model",
                                      chains.paths.front().string(), name));
    columns.push_back(static_cast<std::size_t>(found - chains.columns.begin()));
  }
  return columns;
}

/// Running sums over draws: of the predictions (and, for a mean, of variance + mean²), and the
/// log-sum-exp of each row's log density.
struct Averages {
  std::vector<double> sum, second, log_sum;
  std::size_t draws = 0;

  void add(const sgmcmc::PredictionForm& form, std::span<const double> values, std::span<const double> log_densities) {
    if (form.probabilities) {
      for (std::size_t k = 0; k < values.size(); ++k) sum[k] += values[k];
    } else {
      for (std::size_t j = 0; j < values.size() / 2; ++j) {
        const double mean = values[2 * j], variance = values[2 * j + 1];
        sum[j] += mean;
        second[j] += variance + mean * mean;
      }
    }
    for (std::size_t j = 0; j < log_densities.size(); ++j) {
      const double a = log_sum[j], b = log_densities[j], top = std::max(a, b);
      log_sum[j] = top == -std::numeric_limits<double>::infinity() ? top : top + std::log(std::exp(a - top) + std::exp(b - top));
    }
    ++draws;
  }
};

std::string number(double x) {
  std::string text;
  sgmcmc::append_number(text, x);
  return text;
}

/// The averaged prediction of every row as CSV: row, then the probabilities, or mean and sd.
std::string prediction_table(const sgmcmc::PredictionForm& form, const Averages& averages, std::size_t rows) {
  const auto draws = static_cast<double>(averages.draws);
  std::string text = fmt::format("row,{}\n", form.probabilities ? fmt::format("{}", fmt::join(form.names, ",")) : "mean,sd");
  const std::size_t width = form.probabilities ? form.names.size() : 1;
  for (std::size_t j = 0; j < rows; ++j) {
    text += std::to_string(j + 1);
    if (form.probabilities) {
      for (std::size_t c = 0; c < width; ++c) text += "," + number(averages.sum[j * width + c] / draws);
    } else {
      const double mean = averages.sum[j] / draws;
      text += "," + number(mean) + "," + number(std::sqrt(std::max(0.0, averages.second[j] / draws - mean * mean)));
    }
    text += "\n";
  }
  return text;
}

/// The held-out summary line when the rows have labels.
std::string held_out_summary(const sgmcmc::PredictionForm& form, const Averages& averages,
                             const std::vector<double>& responses) {
  const auto draws = static_cast<double>(averages.draws), rows = static_cast<double>(responses.size());
  double log_density = 0.0, score = 0.0;
  for (std::size_t j = 0; j < responses.size(); ++j) {
    log_density += (averages.log_sum[j] - std::log(draws)) / rows;
    if (form.probabilities && form.names.size() == 1) {
      score += ((averages.sum[j] / draws > 0.5) == (responses[j] == 1.0)) / rows;
    } else if (form.probabilities) {
      const std::size_t classes = form.names.size();
      const auto row = std::span(averages.sum).subspan(j * classes, classes);
      score += (static_cast<double>(std::max_element(row.begin(), row.end()) - row.begin()) == responses[j]) / rows;
    } else {
      const double error = averages.sum[j] / draws - responses[j];
      score += error * error / rows;
    }
  }
  return fmt::format("held-out log predictive density {:.6g} (mean per row), {} {:.6g}", log_density,
                     form.probabilities ? "accuracy" : "rmse", form.probabilities ? score : std::sqrt(score));
}

int predict_command(const PredictOptions& options) {
  RecordedModel recorded = recorded_model(options.folder);
  const sgmcmc::SectionReader section(recorded.config["model"]);  // as the run resolved it
  const std::string name = model_name(section);
  const auto plugin = sgmcmc::load_plugin(name, plugin_folders(options.plugin_dir));
  if (!plugin.info().capabilities.prediction)
    throw sgmcmc::Error(fmt::format("predict: model '{}' ({}) cannot predict: it has no 'prediction' capability (see "
                                    "`sgmcmc list`)",
                                    name, plugin.path().string()));
  const auto model = plugin.create({section, recorded.data_seed});
  if (!model->capabilities().prediction)
    throw sgmcmc::Error(fmt::format("predict: model '{}' as configured in {} cannot predict", name, options.folder.string()));
  const Chains chains = read_chains(options.folder, "predict", 1);
  const auto columns = parameter_columns(chains, model->parameter_names());
  const auto rows = model->read_prediction_rows(options.data.string());
  const auto form = model->prediction_form();
  const std::size_t width = form.probabilities ? form.names.size() : 2;

  Averages averages{std::vector<double>(rows->count * (form.probabilities ? width : 1), 0.0),
                    std::vector<double>(form.probabilities ? 0 : rows->count, 0.0),
                    std::vector<double>(rows->responses.empty() ? 0 : rows->count, -std::numeric_limits<double>::infinity())};
  std::optional<sgmcmc::OutputFile> per_draw;
  if (options.per_draw) {
    per_draw.emplace(*options.per_draw);
    per_draw->write(fmt::format("chain,draw,row,{}\n", fmt::join(form.names, ",")));
  }
  std::vector<double> theta(columns.size()), values(rows->count * width), log_densities(averages.log_sum.size());
  for (std::size_t k = 0; k < chains.files.size(); ++k)
    for (std::size_t draw = 0; draw < chains.files[k].rows.size(); ++draw) {
      const auto& row = chains.files[k].rows[draw];
      for (std::size_t j = 0; j < columns.size(); ++j) theta[j] = row[columns[j]];
      model->predict_rows(theta, *rows, values, log_densities);
      averages.add(form, values, log_densities);
      if (!per_draw) continue;
      std::string text;
      for (std::size_t j = 0; j < rows->count; ++j) {
        text += fmt::format("{},{},{}", k + 1, draw + 1, j + 1);
        for (std::size_t c = 0; c < width; ++c) text += "," + number(values[j * width + c]);
        text += "\n";
      }
      per_draw->write(text);
    }
  if (per_draw) per_draw->close();

  const std::string table = prediction_table(form, averages, rows->count);
  if (options.out) {
    sgmcmc::OutputFile out(*options.out);
    out.write(table);
    out.close();
  } else {
    fmt::print("{}", table);
    std::fflush(stdout);
  }
  fmt::print(stderr, "predict: {} rows of {}, {} draws from {} chain(s){}\n", rows->count, options.data.string(),
             averages.draws, chains.files.size(),
             rows->responses.empty() ? "; no labels, so no held-out scores"
                                     : "; " + held_out_summary(form, averages, rows->responses));
  return 0;
}

}  // namespace

Command add_predict_command(CLI::App& app) {
  const auto options = std::make_shared<PredictOptions>();
  auto* command = app.add_subcommand("predict", "the posterior predictive of a run's draws on the rows of a data file, as CSV");
  command->footer("Example: sgmcmc predict runs/glm --data held_out.csv --out predictions.csv");
  command->add_option("folder", options->folder, "a finished run's output folder")->required();
  command->add_option("--data", options->data, "rows in the layout of the model's data (the label first, or none)")
      ->required();
  command->add_option("--out", options->out, "write the CSV here (default: stdout)");
  command->add_option("--per-draw", options->per_draw, "also write every draw's predictions (chain, draw, row, ...) here");
  command->add_option("--plugin-dir", options->plugin_dir, "a folder to look for the model's plugin in first");
  return {command, [options] { return predict_command(*options); }};
}
