// `sgmcmc convert IN OUT`: a regression data set (CSV or LIBSVM, plain or gzip; or a binary one)
// rewritten as a binary one that the plugins read without parsing (issue 45): a dense .npy file or
// a sparse .csr folder, by OUT's name (plugins/regression/binary_rows.hpp gives both layouts).
// With --ratings, pmf's triples (user item rating) as a .npy of rows × 3 (plugins/pmf/ratings.hpp);
// with --docword, lda's UCI bag of words as a .csr folder of counts (plugins/lda/corpus.hpp).
// The regression plugins' own reader reads IN, so a file converts exactly when a run accepts it,
// and the labels are kept as read: model.labels maps them when the binary file is read. A dense
// .npy is written a block of rows (some 32 MB of values) at a time, so a file larger than memory converts; it is
// written beside OUT and renamed to it once complete, so that a failure leaves no partial file.
// A .csr folder is built from the rows held whole.
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "binary_rows.hpp"
#include "commands.hpp"
#include "corpus.hpp"
#include "labelled_rows.hpp"
#include "ratings.hpp"

import sgmcmc;

namespace fs = std::filesystem;

namespace {

struct ConvertOptions {
  std::string in, out, format = "auto", dtype = "float64";
  std::size_t features = 0;
  bool replace = false, ratings = false, docword = false;
};

/// The rows of the data file `in` (any format read_labelled_rows reads; labels as read) written as
/// a dense .npy at `path`, a block of rows (some 32 MB of values) at a time (for_each_row_block):
/// a file larger than memory converts. `check` sees each block before it is written. Returns the
/// row count.
std::size_t convert_to_npy(const std::string& in, regression::FileFormat format, std::size_t declared_features,
                           const std::string& path, regression::npy::Dtype dtype,
                           const std::function<void(const regression::LabelledRows&)>& check) {
  std::optional<regression::npy::Writer> out;
  constexpr std::size_t block_values = std::size_t{1} << 22;  // 32 MB of doubles a block
  const std::size_t rows =
      regression::for_each_row_block(in, format, declared_features, block_values, [&](const regression::LabelledRows& block) {
        check(block);
        if (!out) out.emplace(path, dtype, block.features + 1);  // the width is the first block's: every block's
        regression::append_dense_rows(block, *out);
      });
  out->finish();
  return rows;
}

/// float32 rounds the features, as model.storage = "float" does; a label (a class, a count, a
/// response) that would change is refused instead, naming its row.
void require_float32_labels(const regression::LabelledRows& rows, const std::string& in) {
  for (std::size_t i = 0; i < rows.y.size(); ++i)
    if (static_cast<double>(static_cast<float>(rows.y[i])) != rows.y[i])
      throw sgmcmc::Error(fmt::format("{}: the label {} is not a float32 and would be rounded; convert with --dtype float64",
                                      regression::row_place(rows, i, in), rows.y[i]));
}

/// Whether an option of the regression rows' conversion was given (--dtype float32, --format,
/// --features), which ratings and corpora, each with a layout of its own, refuse.
bool row_options_given(const ConvertOptions& options) {
  return options.dtype != "float64" || options.format != "auto" || options.features != 0;
}

/// pmf's ratings: every triple as read (no rating range: model.rating_min/max apply when the .npy
/// is read), float64, so that ids up to 2^53 and every rating stay exact.
int convert_ratings(const ConvertOptions& options, regression::BinaryLayout layout) {
  if (layout != regression::BinaryLayout::dense_npy || row_options_given(options))
    throw sgmcmc::Error(fmt::format("convert --ratings: {}: ratings are written as one float64 .npy (rows × user, item, "
                                    "rating), without --dtype float32, --format or --features",
                                    options.out));
  const auto triples = pmf::read_triples(options.in, {std::numeric_limits<double>::lowest(), std::numeric_limits<double>::max()});
  pmf::write_triples_npy(triples, options.out);
  fmt::print(stderr, "sgmcmc: note: {}: {} ratings × (user, item, rating), <f8\n", options.out, triples.size());
  return 0;
}

/// lda's corpus: every document and count as read (before any cut of the vocabulary, which a run
/// makes), so that a run on the folder draws what the run on the text draws.
int convert_docword(const ConvertOptions& options, regression::BinaryLayout layout) {
  if (layout != regression::BinaryLayout::sparse_csr || row_options_given(options))
    throw sgmcmc::Error(fmt::format("convert --docword: {}: a corpus is written as a .csr folder of whole counts, without "
                                    "--dtype, --format or --features",
                                    options.out));
  const auto corpus = lda::read_bag_of_words(options.in);
  lda::write_bag_of_words_csr(corpus, options.out);
  fmt::print(stderr, "sgmcmc: note: {}: {} documents ({} without words) × {} words, counts as CSR\n", options.out,
             corpus.documents.size() + corpus.empty_documents, corpus.empty_documents, corpus.words);
  return 0;
}

int convert(const ConvertOptions& options) {
  const auto layout = regression::binary_layout(options.out);
  if (layout == regression::BinaryLayout::none)
    throw sgmcmc::Error(fmt::format("convert: {}: expected a name ending in .npy (dense rows) or .csr (a sparse folder)",
                                    options.out));
  if (!options.replace && fs::exists(options.out))
    throw sgmcmc::Error(fmt::format("convert: {} exists; pass --replace to overwrite it", options.out));
  if (options.ratings && options.docword)
    throw sgmcmc::Error("convert: --ratings and --docword name two kinds of input; give one");
  if (options.ratings) return convert_ratings(options, layout);
  if (options.docword) return convert_docword(options, layout);
  const auto dtype = options.dtype == "float32" ? regression::npy::Dtype::float32 : regression::npy::Dtype::float64;
  const auto format = regression::parse_file_format(options.format, "convert --format");
  const auto check = [&](const regression::LabelledRows& rows) {
    if (dtype == regression::npy::Dtype::float32) require_float32_labels(rows, options.in);
  };
  std::size_t count = 0, features = 0;
  if (layout == regression::BinaryLayout::dense_npy) {
    const std::string partial = options.out + ".partial";
    if (!options.replace && fs::exists(partial))
      throw sgmcmc::Error(fmt::format("convert: {} exists (a conversion that stopped?); remove it or pass --replace", partial));
    try {
      count = convert_to_npy(options.in, format, options.features, partial, dtype, check);
      features = regression::npy::read_header(partial).columns() - 1;
      fs::rename(partial, options.out);
    } catch (...) {
      std::error_code ignored;
      fs::remove(partial, ignored);
      throw;
    }
  } else {
    const auto rows = regression::read_labelled_rows(options.in, format, regression::LabelCoding::as_read, options.features);
    check(rows);
    regression::write_binary_rows(rows, layout, options.out, dtype);
    count = rows.y.size();
    features = rows.features;
  }
  fmt::print(stderr, "sgmcmc: note: {}: {} rows × {} features, {}, {}\n", options.out, count, features,
             regression::npy::descr(dtype), layout == regression::BinaryLayout::dense_npy ? "dense" : "sparse (CSR)");
  return 0;
}

}  // namespace

Command add_convert_command(CLI::App& app) {
  const auto options = std::make_shared<ConvertOptions>();
  auto* command = app.add_subcommand("convert", "a regression data set (CSV or LIBSVM) as a binary one read without parsing");
  command->footer("Example: sgmcmc convert covtype.libsvm.gz covtype.npy --dtype float32");
  command->add_option("in", options->in, "the data file: CSV or LIBSVM (plain or gzip), the label first")->required();
  command->add_option("out", options->out, "NAME.npy (a dense NumPy array, the label first) or NAME.csr (a sparse folder)")
      ->required();
  command->add_option("--format", options->format, "how IN is read: auto, csv or libsvm (model.format's values)")
      ->check(CLI::IsMember({"auto", "csv", "libsvm"}));
  command->add_option("--features", options->features, "the feature count (model.features): LIBSVM's width")
      ->check(at_least_zero);
  command->add_option("--dtype", options->dtype, "float64 (exact) or float32 (half the bytes; labels must be exact)")
      ->check(CLI::IsMember({"float64", "float32"}));
  command->add_flag("--replace", options->replace, "overwrite OUT if it exists");
  command->add_flag("--ratings", options->ratings, "IN is pmf's ratings (user item rating per line); OUT a .npy");
  command->add_flag("--docword", options->docword, "IN is lda's UCI bag of words (docword.NAME.txt); OUT a .csr folder");
  return {command, [options] { return convert(*options); }};
}
