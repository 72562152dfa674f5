// Standard and fmt headers before the header that imports sgmcmc: after an import, clang 19
// does not see the names fmt's templates need.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <fmt/format.h>

#include "prepared_rows.hpp"

namespace regression {

namespace {

using sgmcmc::Settings;

/// model.subsample of the training rows (Baker et al. 2019's N ≈ 1%, 10%, 100% runs), in file order.
std::vector<std::size_t> subsample(const Settings& settings, const std::vector<std::size_t>& rows, sgmcmc::Rng& rng) {
  if (rows.empty()) throw sgmcmc::Error("model: no training rows are left after the test set was held out");
  const std::size_t count = sgmcmc::row_count(settings, "subsample", 1.0, rows.size(), 1, rows.size());
  if (count == rows.size()) return rows;
  auto chosen = sgmcmc::split_rows(rows.size(), count, rng).chosen;
  std::sort(chosen.begin(), chosen.end());
  for (auto& r : chosen) r = rows[r];
  return chosen;
}

}  // namespace

Prepared prepare(const sgmcmc::ModelContext& context, LabelCoding coding, const Simulator& simulate) {
  const Settings& settings = context.settings;
  const bool from_prior = settings.flag("simulate_from_prior", false);
  const auto format = parse_file_format(settings.text("format", "auto"), settings.describe("format"));
  const auto declared = static_cast<std::size_t>(settings.integer_at_least("features", 0, 0));
  sgmcmc::Rng rng(context.seed, sgmcmc::data_stream);
  Prepared prepared;
  prepared.format = format;
  prepared.storage = {.huge_pages = settings.flag("huge_pages", true),
                      .prefetch = static_cast<std::size_t>(settings.integer_at_least("prefetch", 8, 0))};

  LabelledRows& data = prepared.data;
  if (auto path = sgmcmc::file_setting(settings, "data")) {
    if (settings.contains("n"))
      throw sgmcmc::Error(fmt::format("{}: sets the size of simulated data; with model.data the rows come from the file",
                                      settings.describe("n")));
    if (from_prior)
      throw sgmcmc::Error(fmt::format("{}: simulates data from a prior draw; with model.data the rows come from the file",
                                      settings.describe("simulate_from_prior")));
    data = read_labelled_rows(*path, format, coding, declared);
  } else {
    Simulation simulation = simulate(declared, from_prior, rng);
    data = std::move(simulation.data);
    prepared.beta_star = std::move(simulation.beta_star);
  }

  std::vector<std::size_t> train_rows;
  if (auto path = sgmcmc::file_setting(settings, "test_data")) {
    if (settings.contains("test_size"))
      throw sgmcmc::Error(fmt::format("{}: the test set is model.test_data; remove one of the two", settings.describe("test_size")));
    LabelledRows& test = prepared.test_file;
    test = read_labelled_rows(*path, format, coding, declared);
    if (test.sparse && test.features < data.features) widen(test, data.features);
    if (test.features != data.features)
      throw sgmcmc::Error(fmt::format("{} has {} features, but {} has {}; the test set must have the training set's",
                                      *path, test.features, settings.optional_text("data").value_or("the simulated data"),
                                      data.features));
    prepared.test_from_file = true;
    prepared.test = sgmcmc::index_range(test.y.size());
    train_rows = sgmcmc::index_range(data.y.size());
  } else {
    const std::size_t rows = data.y.size();
    auto split = sgmcmc::split_rows(rows, sgmcmc::row_count(settings, "test_size", 0.1, rows, 0, rows - 1), rng);
    prepared.test = std::move(split.chosen);
    train_rows = std::move(split.rest);
  }
  prepared.train = subsample(settings, train_rows, rng);
  return prepared;
}

}  // namespace regression
