// Binary data sets through the real CLI (issue 45 item 2): `sgmcmc convert` of CSV and LIBSVM
// files to a dense .npy file and a sparse .csr folder, runs on them that draw what runs on the
// text draw, bit for bit, and the refusals of malformed binary files. The malformed files are
// written here byte by byte, following NumPy's format description (NEP 1), not by sgmcmc's writer.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "support.hpp"

import sgmcmc;

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

/// A chain file's draws: its lines that are not comments (the comments name the data file).
std::string draws_of(const fs::path& chain) {
  std::string draws;
  for (const auto& line : test::lines_of(test::draws_without_elapsed_time(chain)))
    if (!line.starts_with("#")) draws += line + "\n";
  return draws;
}

/// Runs `model_lines` on `data` (short SGLD, 2 chains, a tenth held out) into `out`.
void run_on(const test::TempDir& dir, const std::string& model_lines, const fs::path& data, const fs::path& out) {
  const auto config = dir.write(out.filename().string() + ".toml", fmt::format(R"([model]
{}data = "{}"
[estimator]
name = "minibatch"
batch_size = 20
[integrator]
name = "sgld"
step_size = 0.001
[run]
warmup = 20
iterations = 60
chains = 2
seed = 5
)",
                                                                            model_lines, data.string()));
  const auto result = test::run_cli(fmt::format("run --config '{}' --out '{}' --quiet", config.string(), out.string()));
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
}

void convert(const fs::path& in, const fs::path& out, const std::string& options = "") {
  const auto result = test::run_cli(fmt::format("convert '{}' '{}' {}", in.string(), out.string(), options));
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
}

/// Both chains of the run on each binary copy equal the run on the text file, draw for draw.
void check_same_draws(const test::TempDir& dir, const std::string& model_lines, const fs::path& text,
                      const std::vector<fs::path>& copies, const std::string& tag = "run") {
  const auto reference = dir.path() / (tag + "-" + text.filename().string());
  run_on(dir, model_lines, text, reference);
  for (const auto& copy : copies) {
    INFO(copy.filename().string());
    const auto out = dir.path() / (tag + "-" + copy.filename().string());
    run_on(dir, model_lines, copy, out);
    for (const char* chain : {"chain-1.csv", "chain-2.csv"}) {
      const auto expected = draws_of(reference / chain);
      REQUIRE(test::lines_of(expected).size() > 60);  // the header and the draws
      CHECK(draws_of(out / chain) == expected);
    }
  }
}

/// Rows of a label then `features` values with all 17 significant digits, so that a reader that
/// rounds anywhere (to float, through a decimal text) changes the draws.
std::string csv_rows(std::size_t rows, std::size_t features, bool binary_label) {
  sgmcmc::Rng rng(11, 0);
  std::string text;
  for (std::size_t i = 0; i < rows; ++i) {
    std::vector<double> x(features);
    double z = 0.3;
    for (std::size_t j = 0; j < features; ++j) z += (x[j] = rng.normal()) * std::sin(1.0 + static_cast<double>(j));
    const double y = binary_label ? (rng.uniform() < 1.0 / (1.0 + std::exp(-z)) ? 1.0 : 0.0) : z + 0.5 * rng.normal();
    text += fmt::format("{:.17g}", y);
    for (double v : x) text += fmt::format(",{:.17g}", v);
    text += "\n";
  }
  return text;
}

/// An .npy file as NEP 1 describes it: magic, version 1.0, the header length (2 bytes, little
/// endian), the dict padded with spaces to a multiple of 64 bytes with '\n', then `payload`.
std::string npy_bytes(const std::string& dict, const std::string& payload) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += '\x01';
  bytes += '\x00';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  return bytes + header + payload;
}

template <class T>
std::string raw(const std::vector<T>& values) {
  std::string bytes(values.size() * sizeof(T), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::string f8_matrix(std::size_t rows, std::size_t columns, const std::string& payload) {
  return npy_bytes(fmt::format("{{'descr': '<f8', 'fortran_order': False, 'shape': ({}, {}), }}", rows, columns), payload);
}

std::string vector_npy(const char* descr, std::size_t length, const std::string& payload) {
  return npy_bytes(fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({},), }}", descr, length), payload);
}

/// A run on `data` fails with exit code 2 and a message holding each of `expected`. The run's
/// settings suit two rows, so that a file the reader wrongly accepted would run (exit 0).
void check_refused(const test::TempDir& dir, const fs::path& data, const std::vector<std::string>& expected) {
  INFO(data.filename().string());
  fs::remove_all(dir.path() / "refused");
  const auto result = test::run_cli(fmt::format("run --preset covtype-sgld --set model.data='\"{}\"' --set model.test_size=0 "
                                                "--set estimator.batch_size=1 --set run.iterations=2 --set run.thin=1 --set run.chains=1 "
                                                "--set run.eval_every=1 --out '{}' --quiet",
                                                data.string(), (dir.path() / "refused").string()));
  INFO(result.output);
  CHECK(result.exit_code == 2);
  for (const auto& text : expected) CHECK_THAT(result.output, Contains(text));
  CHECK_THAT(result.output, !Contains("internal error"));
}

}  // namespace

TEST_CASE("binary data: runs on CSV converted to .npy and .csr draw what the run on the CSV draws, bit for bit (glm)") {
  // A gaussian response with 17 digits: the labels go through the binary file unrounded too.
  test::TempDir dir;
  const auto csv = dir.write("rows.csv", csv_rows(150, 4, false));
  convert(csv, dir.path() / "rows.npy");
  convert(csv, dir.path() / "rows.csr");
  check_same_draws(dir, "name = \"glm\"\nfamily = \"gaussian\"\n", csv, {dir.path() / "rows.npy", dir.path() / "rows.csr"});
  // model.offset edits the rows (the first feature becomes o_i): the mapped features are copied first.
  check_same_draws(dir, "name = \"glm\"\nfamily = \"gaussian\"\noffset = true\n", csv, {dir.path() / "rows.npy"}, "offset");
}

TEST_CASE("binary data: float32 data with float storage draw what the CSV with float storage draws, bit for bit (glm)") {
  // CSV values are rounded to float when the design matrix is built; a float32 .npy holds the same
  // floats (the conversion rounded once, double to float), which float storage takes unchanged.
  test::TempDir dir;
  const auto csv = dir.write("rows.csv", csv_rows(150, 4, true));
  convert(csv, dir.path() / "rows32.npy", "--dtype float32");
  convert(csv, dir.path() / "rows32.csr", "--dtype float32");
  check_same_draws(dir, "name = \"glm\"\nfamily = \"bernoulli\"\nstorage = \"float\"\n", csv,
                   {dir.path() / "rows32.npy", dir.path() / "rows32.csr"});
}

TEST_CASE("binary data: runs on LIBSVM converted to .npy and .csr draw what the run on the LIBSVM file draws (mlp)") {
  // Sparse rows, trailing features absent from every row but declared with --features / model.features.
  test::TempDir dir;
  sgmcmc::Rng rng(12, 0);
  std::string text;
  for (int i = 0; i < 120; ++i) {
    text += rng.uniform() < 0.5 ? "1" : "-1";
    for (int j = 1; j <= 5; ++j)
      if (rng.uniform() < 0.6) text += fmt::format(" {}:{:.17g}", j, rng.normal());
    text += "\n";
  }
  const auto libsvm = dir.write("rows.libsvm", text);
  convert(libsvm, dir.path() / "rows.npy", "--features 7");
  convert(libsvm, dir.path() / "rows.csr", "--features 7");
  check_same_draws(dir, "name = \"mlp\"\nfamily = \"bernoulli\"\nlayers = [3]\nfeatures = 7\n", libsvm,
                   {dir.path() / "rows.npy", dir.path() / "rows.csr"});
}

TEST_CASE("binary data: a malformed .npy or .csr is refused with exit code 2, naming the file and what was expected") {
  test::TempDir dir;
  const std::vector<double> six{1.0, 0.5, 0.25, -1.0, 0.125, 2.0};
  const auto good = f8_matrix(2, 3, raw(six));
  {  // the well-formed file runs with check_refused's settings, so each refusal below is the reader's
    const auto result = test::run_cli(fmt::format(
        "run --preset covtype-sgld --set model.data='\"{}\"' --set model.test_size=0 --set estimator.batch_size=1 "
        "--set run.iterations=2 --set run.thin=1 --set run.chains=1 --set run.eval_every=1 --out '{}' --quiet",
        dir.write("good.npy", good).string(), (dir.path() / "good").string()));
    INFO(result.output);
    REQUIRE(result.exit_code == 0);
  }
  check_refused(dir, dir.write("magic.npy", "NUMPY!" + good.substr(6)), {"magic.npy", "not a NumPy .npy file"});
  check_refused(dir, dir.write("truncated.npy", good.substr(0, good.size() - 8)),
                {"truncated.npy", "truncated", "needs 48 bytes", "has 40"});
  check_refused(dir, dir.write("integers.npy", npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }",
                                                         raw(std::vector<std::int64_t>{1, 0, 1, -1, 1, 0}))),
                {"integers.npy", "dtype '<i8'", "expected '<f8' or '<f4'"});
  check_refused(dir, dir.write("big_endian.npy", npy_bytes("{'descr': '>f8', 'fortran_order': False, 'shape': (2, 3), }", raw(six))),
                {"big_endian.npy", "dtype '>f8' is not supported"});
  check_refused(dir, dir.write("fortran.npy", npy_bytes("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", raw(six))),
                {"fortran.npy", "fortran_order is True", "expected a C-order array"});
  check_refused(dir, dir.write("cube.npy", npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2, 3), }", raw(six))),
                {"cube.npy", "3 dimensions"});
  std::vector<double> with_nan = six;
  with_nan[5] = std::nan("");
  check_refused(dir, dir.write("nan.npy", f8_matrix(2, 3, raw(with_nan))), {"nan.npy", "a[1, 2] is nan", "finite"});
  check_refused(dir, dir.write("label.npy", f8_matrix(2, 3, raw(std::vector<double>{1.0, 0.5, 0.25, 3.0, 0.1, 0.2}))),
                {"label.npy: data row 2: label 3 is not binary"});

  // A CSR folder whose labels disagree with its shape in the number of rows.
  const auto csr = dir.path() / "rows.csr";
  fs::create_directory(csr);
  dir.write("rows.csr/shape.npy", vector_npy("<i8", 2, raw(std::vector<std::int64_t>{3, 2})));
  dir.write("rows.csr/indptr.npy", vector_npy("<i8", 4, raw(std::vector<std::int64_t>{0, 1, 1, 2})));
  dir.write("rows.csr/indices.npy", vector_npy("<i4", 2, raw(std::vector<std::int32_t>{1, 0})));
  dir.write("rows.csr/data.npy", vector_npy("<f8", 2, raw(std::vector<double>{0.5, -0.5})));
  dir.write("rows.csr/labels.npy", vector_npy("<f8", 2, raw(std::vector<double>{1.0, -1.0})));
  check_refused(dir, csr, {"labels.npy: 2 entries", "shape.npy says 3 rows"});
  dir.write("rows.csr/labels.npy", vector_npy("<f8", 3, raw(std::vector<double>{1.0, -1.0, 1.0})));
  dir.write("rows.csr/indices.npy", vector_npy("<i4", 2, raw(std::vector<std::int32_t>{1, 2})));
  check_refused(dir, csr, {"indices.npy: indices[1] = 2 (row 2)", "expected a column in 0..1"});
  fs::remove(csr / "data.npy");
  check_refused(dir, csr, {"data.npy: cannot open"});
}

TEST_CASE("convert: refuses an unknown output name, an existing output without --replace, and a float32 label that would round") {
  test::TempDir dir;
  const auto csv = dir.write("rows.csv", "1,0.5\n0.1,0.25\n");
  auto result = test::run_cli(fmt::format("convert '{}' '{}'", csv.string(), (dir.path() / "rows.bin").string()));
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains("rows.bin: expected a name ending in .npy (dense rows) or .csr"));
  const auto out = dir.path() / "rows.npy";
  result = test::run_cli(fmt::format("convert '{}' '{}' --dtype float32", csv.string(), out.string()));
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains("rows.csv:2: the label 0.1 is not a float32"));
  CHECK(!fs::exists(out));
  convert(csv, out);
  result = test::run_cli(fmt::format("convert '{}' '{}'", csv.string(), out.string()));
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains("rows.npy exists; pass --replace"));
  convert(csv, out, "--replace");
}

TEST_CASE("binary data: pmf ratings converted with --ratings draw what the run on the text file draws, and bad ids are refused") {
  test::TempDir dir;
  sgmcmc::Rng rng(13, 0);
  std::string text;
  for (int user = 1; user <= 30; ++user)  // 10 distinct items a user, MovieLens' tab-separated u.data
    for (int k = 0; k < 10; ++k) text += fmt::format("{}\t{}\t{}\t8800{}\n", user, (user * 7 + k * 5) % 53 + 1, 1 + rng.index(5), k);
  const auto ratings = dir.write("u.data", text);
  convert(ratings, dir.path() / "u.npy", "--ratings");
  check_same_draws(dir, "name = \"pmf\"\n", ratings, {dir.path() / "u.npy"});

  const std::vector<double> fractional_user{1.0, 2.0, 4.0, 1.5, 3.0, 5.0};
  const auto bad = dir.write("fractional.npy", f8_matrix(2, 3, raw(fractional_user)));
  // Settings a two-rating file runs with (shown on the same ratings with whole ids), so that a
  // fractional id wrongly accepted fails on the exit code too.
  const auto pmf_run = [&](const fs::path& data) {
    fs::remove_all(dir.path() / "refused");
    return test::run_cli(fmt::format("run --preset pmf-sgld --set model.data='\"{}\"' --set estimator.batch_size=1 "
                                     "--set run.iterations=2 --set run.thin=1 --set run.eval_every=1 --out '{}' --quiet",
                                     data.string(), (dir.path() / "refused").string()));
  };
  const std::vector<double> whole_ids{1.0, 2.0, 4.0, 1.0, 3.0, 5.0};
  REQUIRE(pmf_run(dir.write("whole.npy", f8_matrix(2, 3, raw(whole_ids)))).exit_code == 0);
  auto result = pmf_run(bad);
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains("fractional.npy: a[1, 0] = 1.5: the user id is not a non-negative integer"));
  const auto wide = dir.write("wide.npy", f8_matrix(1, 6, raw(fractional_user)));
  result = pmf_run(wide);
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains("wide.npy: a 2-D '<f8' array of 6 column(s); expected 2-D '<f8' or '<f4', rows × (user, item, rating)"));
  result = test::run_cli(fmt::format("convert --ratings '{}' '{}'", ratings.string(), (dir.path() / "u.csr").string()));
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains("ratings are written as one float64 .npy"));
}

TEST_CASE("binary data: an lda corpus converted with --docword draws what the run on the docword file draws, and bad counts are refused") {
  test::TempDir dir;
  // 50 declared documents over 30 words, in UCI's layout: lines out of order, a (doc, word) pair on
  // two lines (their counts add), and documents 7 and 50 without a line (declared, empty).
  sgmcmc::Rng rng(17, 0);
  std::string lines;
  std::size_t entries = 0;
  for (int doc = 50 - 1; doc >= 1; --doc) {
    if (doc == 7) continue;
    for (int word = 1; word <= 30; word += 1 + static_cast<int>(rng.index(4))) {
      lines += fmt::format("{} {} {}\n", doc, word, 1 + rng.index(5));
      ++entries;
    }
  }
  lines += "3 1 2\n";
  ++entries;
  const auto docword = dir.write("docword.small.txt", fmt::format("50\n30\n{}\n{}", entries, lines));
  const auto folder = dir.path() / "small.csr";
  const auto converted = test::run_cli(fmt::format("convert --docword '{}' '{}'", docword.string(), folder.string()));
  INFO(converted.output);
  REQUIRE(converted.exit_code == 0);
  CHECK_THAT(converted.output, Contains("50 documents (2 without words) × 30 words"));
  check_same_draws(dir, "name = \"lda\"\ntopics = 3\n", docword, {folder});

  // Refusals name the array and the entry: the run reads the folder as the text's reader would.
  const auto lda_run = [&] {
    fs::remove_all(dir.path() / "refused");
    return test::run_cli(fmt::format("run --preset lda-sgld --set model.data='\"{}\"' --set model.test_docs=0 "
                                     "--set estimator.batch_size=1 --set run.iterations=2 --set run.thin=1 --out '{}' --quiet",
                                     folder.string(), (dir.path() / "refused").string()));
  };
  const auto lda_refusal = [&](const std::vector<std::string>& expected) {
    const auto result = lda_run();
    INFO(result.output);
    CHECK(result.exit_code == 2);
    for (const auto& text : expected) CHECK_THAT(result.output, Contains(text));
  };
  const auto write_counts = [&](const std::vector<std::int64_t>& counts) {
    dir.write("small.csr/data.npy", vector_npy("<i8", counts.size(), raw(counts)));
  };
  dir.write("small.csr/shape.npy", vector_npy("<i8", 2, raw(std::vector<std::int64_t>{2, 4})));
  dir.write("small.csr/indptr.npy", vector_npy("<i8", 3, raw(std::vector<std::int64_t>{0, 2, 3})));
  dir.write("small.csr/indices.npy", vector_npy("<i4", 3, raw(std::vector<std::int32_t>{0, 3, 1})));
  write_counts({1, 2, 1});
  {  // this corpus runs: each refusal below is the reader's
    const auto result = lda_run();
    INFO(result.output);
    REQUIRE(result.exit_code == 0);
  }
  write_counts({1, 0, 1});
  lda_refusal({"small.csr/data.npy: data[1] = 0; expected a count in 1..4294967295"});
  write_counts({1, 2, 1});
  dir.write("small.csr/indices.npy", vector_npy("<i4", 3, raw(std::vector<std::int32_t>{3, 0, 1})));
  lda_refusal({"small.csr/indices.npy: indices[1] = 0 (document 1)", "increasing along a document"});
  dir.write("small.csr/indices.npy", vector_npy("<i4", 3, raw(std::vector<std::int32_t>{0, 3, 4})));
  lda_refusal({"small.csr/indices.npy: indices[2] = 4 (document 2); expected a word in 0..3"});
  dir.write("small.csr/data.npy", vector_npy("<f8", 3, raw(std::vector<double>{1.0, 2.0, 1.0})));
  lda_refusal({"small.csr/data.npy: a 1-D '<f8' array; expected a 1-D array of '<i8' or '<i4' whole numbers"});
  const auto result = test::run_cli(fmt::format("convert --docword '{}' '{}'", docword.string(), (dir.path() / "c.npy").string()));
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains("a corpus is written as a .csr folder"));
}
