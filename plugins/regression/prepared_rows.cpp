// Standard and fmt headers before the header that imports sgmcmc: after an import, clang 19
// does not see the names fmt's templates need.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <fmt/format.h>

#include "prepared_rows.hpp"

#include "binary_rows.hpp"

namespace regression {

namespace {

using sgmcmc::SectionReader;

/// model.subsample of the training rows (Baker et al. 2019's N ≈ 1%, 10%, 100% runs), in file order.
std::vector<std::size_t> subsample(SectionReader settings, const std::vector<std::size_t>& rows, sgmcmc::Rng& rng) {
  if (rows.empty()) throw sgmcmc::Error("model: no training rows are left after the test set was held out");
  const std::size_t count = sgmcmc::row_count(settings, "subsample", 1.0, rows.size(), 1, rows.size());
  if (count == rows.size()) return rows;
  auto chosen = sgmcmc::split_rows(rows.size(), count, rng).chosen;
  std::sort(chosen.begin(), chosen.end());
  for (auto& r : chosen) r = rows[r];
  return chosen;
}

/// run.data_parallel's part of a binary file (.npy or .csr), known by its headers alone: the rank
/// maps only its block's rows once the split into training and held-out rows is known.
struct MappedLater {
  std::string path;
  BinaryLayout layout;
  std::size_t rows = 0;
};

/// The rank's share (context.rows) of the training rows `prepared.train`: their block of the
/// global numbering, the same on every rank whatever the source, so the law is the one-process
/// law. A text or simulated source was read whole (parsing or simulating needs every row before
/// it: the peak is the whole set), and the model copies only the block; a binary file (.npy or
/// .csr) is mapped from the block's first row to its last (held-out rows between them are mapped,
/// not kept) and its held-out rows read one by one, so that the rank never maps the other ranks' pages.
void keep_share(Prepared& prepared, sgmcmc::RowShare share, const std::optional<MappedLater>& binary_file,
                std::size_t declared, LabelCoding coding) {
  std::vector<std::size_t> mine = sgmcmc::share_of(prepared.train, share);
  if (binary_file) {
    const std::string& path = binary_file->path;
    const bool dense = binary_file->layout == BinaryLayout::dense_npy;
    const std::size_t low = mine.front(), high = mine.back() + 1;  // train is in file order
    if (!prepared.test_from_file && !prepared.test.empty()) {
      prepared.test_file = dense ? read_npy_rows_at(path, declared, prepared.test)
                                 : read_csr_rows_at(path, declared, prepared.test);
      if (coding != LabelCoding::as_read) map_labels(prepared.test_file.y, {}, coding, path);
      prepared.test = sgmcmc::index_range(prepared.test.size());
      prepared.test_from_file = true;
      prepared.test_file_name = path + " (its held-out rows)";
    }
    prepared.data = dense ? map_npy_rows(path, declared, {low, high - low}) : read_csr_rows(path, declared, {low, high - low});
    sgmcmc::note_rows_read(path, high - low, false);
    if (coding != LabelCoding::as_read) map_labels(prepared.data.y, {}, coding, path);
    for (auto& row : mine) row -= low;
  }
  prepared.train = std::move(mine);
}

}  // namespace

Prepared prepare(const sgmcmc::ModelContext& context, LabelCoding coding, const Simulator& simulate) {
  SectionReader settings = context.settings;
  const bool from_prior = settings.flag("simulate_from_prior", false);
  const auto format = parse_file_format(settings.text("format", "auto"), settings.describe("format"));
  const auto declared = static_cast<std::size_t>(settings.integer_at_least("features", 0, 0));
  sgmcmc::Rng rng(context.seed, sgmcmc::data_stream);
  Prepared prepared;
  prepared.format = format;
  prepared.storage = {.huge_pages = settings.flag("huge_pages", true),
                      .prefetch = static_cast<std::size_t>(settings.integer_at_least("prefetch", 8, 0))};

  LabelledRows& data = prepared.data;
  std::optional<MappedLater> binary_file;
  if (auto path = sgmcmc::file_setting(settings, "data")) {
    if (settings.contains("n"))
      throw sgmcmc::Error(fmt::format("{}: sets the size of simulated data; with model.data the rows come from the file",
                                      settings.describe("n")));
    if (from_prior)
      throw sgmcmc::Error(fmt::format("{}: simulates data from a prior draw; with model.data the rows come from the file",
                                      settings.describe("simulate_from_prior")));
    if (const auto layout = binary_layout(*path); !context.rows.whole() && layout != BinaryLayout::none) {
      if (coding == LabelCoding::automatic)
        throw sgmcmc::Error(fmt::format("{}: auto tells the coding from every row's label, and a rank of a data-parallel "
                                        "run reads only its rows of {}; set 0/1, 1/2 or -1/+1",
                                        settings.describe("labels"), *path));
      binary_file = MappedLater{*path, layout, binary_row_count(*path)};
    } else {
      data = read_labelled_rows(*path, format, coding, declared);
    }
  } else {
    Simulation simulation = simulate(declared, from_prior, rng);
    data = std::move(simulation.data);
    prepared.beta_star = std::move(simulation.beta_star);
  }
  const std::size_t rows = binary_file ? binary_file->rows : data.y.size();

  std::vector<std::size_t> train_rows;
  if (auto path = sgmcmc::file_setting(settings, "test_data")) {
    if (settings.contains("test_size"))
      throw sgmcmc::Error(fmt::format("{}: the test set is model.test_data; remove one of the two", settings.describe("test_size")));
    prepared.test_file = read_labelled_rows(*path, format, coding, declared);
    prepared.test_from_file = true;
    prepared.test_file_name = *path;
    prepared.test = sgmcmc::index_range(prepared.test_file.y.size());
    train_rows = sgmcmc::index_range(rows);
  } else {
    if (rows == 0) throw sgmcmc::Error(fmt::format("{}: no data rows", binary_file ? binary_file->path : "model.data"));
    auto split = sgmcmc::split_rows(rows, sgmcmc::row_count(settings, "test_size", 0.1, rows, 0, rows - 1), rng);
    prepared.test = std::move(split.chosen);
    train_rows = std::move(split.rest);
  }
  prepared.train = subsample(settings, train_rows, rng);
  prepared.all_train = prepared.train.size();
  if (!context.rows.whole()) keep_share(prepared, context.rows, binary_file, declared, coding);
  if (auto path = sgmcmc::file_setting(settings, "test_data")) {  // checked once the data's features are known
    LabelledRows& test = prepared.test_file;
    if (test.sparse && test.features < data.features) widen(test, data.features);
    if (test.features != data.features)
      throw sgmcmc::Error(fmt::format("{} has {} features, but {} has {}; the test set must have the training set's",
                                      *path, test.features, settings.optional_text("data").value_or("the simulated data"),
                                      data.features));
  }
  return prepared;
}

void refuse_counting_classes_of_a_share(const sgmcmc::ModelContext& context, bool classes_given) {
  SectionReader settings = context.settings;
  if (classes_given || context.rows.whole() || !settings.contains("data") ||
      binary_layout(settings.text("data", "")) == BinaryLayout::none)
    return;
  throw sgmcmc::Error(fmt::format("{}: family categorical counts the classes of every row's label, and a rank of a "
                                  "data-parallel run maps only its rows of a binary file; set model.classes",
                                  settings.describe("data")));
}

}  // namespace regression
