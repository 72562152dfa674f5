// Row shares (ModelContext::rows, run.data_parallel): a model built as part r of P holds exactly its
// block [⌊N·r/P⌋, ⌊N·(r+1)/P⌋) of the training rows the whole model holds, numbered from 0, so its
// data terms on those rows are the whole model's on the same global items, bit for bit (the same
// rows in the same order through the same kernels), and its held-out rows are the whole model's.
// For logistic, glm, gaussian and mlp, on simulated data, on a CSV file (read whole, then the block
// kept) and on a .npy file or .csr folder (only the block's rows mapped, the held-out rows read one
// by one); for
// pmf's ratings and lda's documents, simulated (read or simulated whole, then the block kept).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "support.hpp"
#include "model_support.hpp"

namespace {

std::shared_ptr<const sgmcmc::Model> build_share(const std::string& name, const std::string& model_lines,
                                                 sgmcmc::RowShare share) {
  auto config = sgmcmc::parse_config("[model]\n" + model_lines, "test.toml");
  sgmcmc::SectionReads reads;
  auto model = test::bundled_plugin(name).create({sgmcmc::SectionReader(config["model"], reads), 3, share});
  sgmcmc::reject_unknown_keys(config["model"], reads);
  return model;
}

/// 60 rows of (y ∈ {0, 1}, x_1..x_3), varied enough that every row's gradient differs.
std::vector<double> rows_of_60() {
  std::vector<double> values;
  for (int i = 0; i < 60; ++i) {
    const double x1 = std::sin(0.7 * i), x2 = std::cos(1.3 * i), x3 = 0.01 * i;
    values.insert(values.end(), {(x1 + x2 > 0.2) ? 1.0 : 0.0, x1, x2, x3});
  }
  return values;
}

std::string write_csv(const test::TempDir& dir, const std::vector<double>& values) {
  std::string text;
  for (std::size_t k = 0; k < values.size(); k += 4)
    text += fmt::format("{:.17g},{:.17g},{:.17g},{:.17g}\n", values[k], values[k + 1], values[k + 2], values[k + 3]);
  return dir.write("rows.csv", text).string();
}

/// NumPy's .npy, version 1.0 (NEP 1), of `values` (NumPy's dtype `descr`, the shape as NumPy
/// writes it), written here so that the test needs no converter.
template <class T>
void write_npy_array(const std::filesystem::path& path, const char* descr, const std::string& shape,
                     const std::vector<T>& values) {
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape);
  header += std::string((64 - (10 + header.size() + 1) % 64) % 64, ' ') + "\n";
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const char length[2] = {static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
  out.write(length, 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(T)));
}

/// The rows as one float64 .npy of rows × (label, features).
std::string write_npy(const test::TempDir& dir, const std::vector<double>& values) {
  const auto path = dir.path() / "rows.npy";
  write_npy_array(path, "<f8", fmt::format("({}, 4)", values.size() / 4), values);
  return path.string();
}

/// The rows as a .csr folder (scipy's CSR arrays, zeros left out: the first row's x_3 = 0).
std::string write_csr(const test::TempDir& dir, const std::vector<double>& values) {
  const auto folder = dir.path() / "rows.csr";
  std::filesystem::create_directories(folder);
  std::vector<std::int64_t> indptr{0};
  std::vector<std::int32_t> indices;
  std::vector<double> data, labels;
  for (std::size_t k = 0; k < values.size(); k += 4) {
    labels.push_back(values[k]);
    for (std::int32_t j = 0; j < 3; ++j)
      if (values[k + 1 + static_cast<std::size_t>(j)] != 0.0) {
        indices.push_back(j);
        data.push_back(values[k + 1 + static_cast<std::size_t>(j)]);
      }
    indptr.push_back(static_cast<std::int64_t>(data.size()));
  }
  const auto one_dimension = [](std::size_t n) { return fmt::format("({},)", n); };
  write_npy_array(folder / "indptr.npy", "<i8", one_dimension(indptr.size()), indptr);
  write_npy_array(folder / "indices.npy", "<i4", one_dimension(indices.size()), indices);
  write_npy_array(folder / "data.npy", "<f8", one_dimension(data.size()), data);
  write_npy_array(folder / "labels.npy", "<f8", one_dimension(labels.size()), labels);
  write_npy_array(folder / "shape.npy", "<i8", one_dimension(2), std::vector<std::int64_t>{static_cast<std::int64_t>(labels.size()), 3});
  return folder.string();
}

double data_potential(const sgmcmc::Model& model, std::span<const double> theta, const std::vector<std::size_t>& items) {
  auto workspace = model.make_workspace();
  return model.data_potential(theta, {items}, *workspace);
}

std::vector<double> data_gradient(const sgmcmc::Model& model, std::span<const double> theta,
                                  const std::vector<std::size_t>& items) {
  auto workspace = model.make_workspace();
  std::vector<double> gradient(model.dimension(), 0.0);
  sgmcmc::Rng unused(0, 0);
  model.add_data_gradient(theta, {items}, gradient, *workspace, unused);
  return gradient;
}

std::vector<double> quantities(const sgmcmc::Model& model, std::span<const double> theta) {
  auto workspace = model.make_workspace();
  std::vector<double> out(model.quantity_names().size());
  model.evaluate_quantities(theta, *workspace, out);
  return out;
}

/// Every part r of P = 2 and 3 against the whole model built from the same lines.
void check_shares(const std::string& name, const std::string& model_lines) {
  const auto whole = build_share(name, model_lines, {});
  const std::size_t n = whole->num_items();
  REQUIRE(n >= 3);
  std::vector<double> theta(whole->dimension());
  const bool positive = whole->capabilities().positive_parameters;  // lda's θ
  for (std::size_t j = 0; j < theta.size(); ++j)
    theta[j] = positive ? 0.3 + 0.2 * static_cast<double>(j % 5) : 0.3 - 0.2 * static_cast<double>(j);
  std::vector<double> whole_bounds(n);
  if (whole->capabilities().lipschitz_bounds) whole->item_lipschitz_bounds(whole_bounds);
  for (const std::size_t ranks : {2u, 3u})
    for (std::size_t rank = 0; rank < ranks; ++rank) {
      INFO(name << ": part " << rank << " of " << ranks);
      const auto part = build_share(name, model_lines, {rank, ranks});
      REQUIRE(part->capabilities().row_shares);
      const std::size_t first = sgmcmc::row_block_start(n, rank, ranks), end = sgmcmc::row_block_start(n, rank + 1, ranks);
      CHECK(part->total_items() == n);
      REQUIRE(part->num_items() == end - first);
      std::vector<std::size_t> local, global;
      for (std::size_t i = first; i < end; ++i) {
        local.push_back(i - first);
        global.push_back(i);
      }
      CHECK(data_gradient(*part, theta, local) == data_gradient(*whole, theta, global));
      if (whole->capabilities().exact_log_likelihood)
        CHECK(data_potential(*part, theta, local) == data_potential(*whole, theta, global));
      for (std::size_t k = 0; k < local.size(); ++k)  // row by row: no row is another's
        CHECK(data_gradient(*part, theta, {local[k]}) == data_gradient(*whole, theta, {global[k]}));
      CHECK(quantities(*part, theta) == quantities(*whole, theta));  // the same held-out rows
      if (whole->capabilities().lipschitz_bounds) {
        std::vector<double> bounds(part->num_items());
        part->item_lipschitz_bounds(bounds);
        CHECK(bounds == std::vector<double>(whole_bounds.begin() + static_cast<std::ptrdiff_t>(first),
                                            whole_bounds.begin() + static_cast<std::ptrdiff_t>(end)));
      }
    }
}

}  // namespace

TEST_CASE("row shares: logistic holds its block of simulated, CSV and .npy rows, the whole model's rows") {
  test::TempDir dir;
  const auto values = rows_of_60();
  check_shares("logistic", "n = 200\n");
  check_shares("logistic", fmt::format("data = {}\ntest_size = 12\n", test::quoted(write_csv(dir, values))));
  check_shares("logistic", fmt::format("data = {}\ntest_size = 12\nlabels = \"0/1\"\n", test::quoted(write_npy(dir, values))));
  check_shares("logistic", fmt::format("data = {}\ntest_size = 12\nlabels = \"0/1\"\nsubsample = 30\nstorage = \"float\"\n",
                                       test::quoted(write_npy(dir, values))));
  check_shares("logistic", fmt::format("data = {}\ntest_size = 12\nlabels = \"0/1\"\n", test::quoted(write_csr(dir, values))));
}

TEST_CASE("row shares: glm (categorical too) and gaussian hold their block of the training rows") {
  test::TempDir dir;
  const auto values = rows_of_60();
  check_shares("glm", "n = 200\n");
  check_shares("glm", fmt::format("data = {}\ntest_size = 12\nfamily = \"bernoulli\"\nlabels = \"0/1\"\n",
                                  test::quoted(write_npy(dir, values))));
  check_shares("glm", "family = \"categorical\"\nn = 200\n");
  check_shares("glm", fmt::format("data = {}\ntest_size = 12\nfamily = \"categorical\"\nclasses = 2\n",
                                  test::quoted(write_npy(dir, values))));
  check_shares("gaussian", "n = 90\ndim = 3\n");
}

TEST_CASE("row shares: mlp holds its block of simulated, CSV and .npy rows") {
  test::TempDir dir;
  const auto values = rows_of_60();
  check_shares("mlp", "layers = [4]\nn = 200\n");
  check_shares("mlp", fmt::format("layers = [4]\ndata = {}\ntest_size = 12\n", test::quoted(write_csv(dir, values))));
  check_shares("mlp", fmt::format("layers = [4]\ndata = {}\ntest_size = 12\nclasses = 2\nstorage = \"float\"\n",
                                  test::quoted(write_npy(dir, values))));
  check_shares("mlp", fmt::format("layers = [3]\nfamily = \"bernoulli\"\nlabels = \"0/1\"\ndata = {}\ntest_size = 12\n",
                                  test::quoted(write_npy(dir, values))));
  check_shares("mlp", fmt::format("layers = [3]\ndata = {}\ntest_size = 12\nclasses = 2\n", test::quoted(write_csr(dir, values))));
}

TEST_CASE("row shares: pmf holds its block of the training ratings, lda its block of the training documents") {
  // pmf's factor rows and mean rating, lda's word counts and the streams of its documents' Gibbs
  // steps (key, d) are every rank's alike: the part's terms are the whole model's on the same items.
  check_shares("pmf", "users = 30\nitems = 20\nratings = 200\nrank = 2\n");
  check_shares("pmf", "users = 30\nitems = 20\nratings = 200\nrank = 2\nbiases = true\nmax_users = 25\n");
  // A ratings .npy, which a part streams (only its block and the held-out ratings kept) while the
  // whole model maps it: ids in no order, one item rated once (in the held-out rows or not).
  test::TempDir dir;
  std::vector<double> triples, test_triples;
  for (int k = 0; k < 90; ++k) triples.insert(triples.end(), {double((k * 37) % 23 + 5), double((k * 11) % 13 + 100), double(1 + k % 5)});
  triples.insert(triples.end(), {7.0, 500.0, 4.0});
  for (int k = 0; k < 6; ++k) test_triples.insert(test_triples.end(), {double(5 + k), double(100 + 2 * k), 3.0});
  const auto ratings = dir.path() / "u.npy", held_out = dir.path() / "test.npy";
  write_npy_array(ratings, "<f8", fmt::format("({}, 3)", triples.size() / 3), triples);
  write_npy_array(held_out, "<f8", fmt::format("({}, 3)", test_triples.size() / 3), test_triples);
  check_shares("pmf", fmt::format("data = {}\nrank = 2\ntest_size = 15\n", test::quoted(ratings.string())));
  check_shares("pmf", fmt::format("data = {}\nrank = 2\nbiases = true\ntest_data = {}\n", test::quoted(ratings.string()),
                                  test::quoted(held_out.string())));
  check_shares("lda", "topics = 3\ndocs = 40\nwords = 15\ndoc_length = 8\ntest_docs = 5\n");
}

TEST_CASE("row shares: a binary file with labels = auto or uncounted classes, and fewer training rows than parts are refused") {
  test::TempDir dir;
  const auto npy = test::quoted(write_npy(dir, rows_of_60())), csr = test::quoted(write_csr(dir, rows_of_60()));
  CHECK_THROWS_WITH(build_share("logistic", fmt::format("data = {}\n", csr), {1, 2}),
                    Catch::Matchers::Contains("auto tells the coding from every row's label"));
  CHECK_THROWS_WITH(build_share("glm", fmt::format("data = {}\nfamily = \"categorical\"\n", csr), {0, 2}),
                    Catch::Matchers::Contains("family categorical counts the classes of every row's label"));
  CHECK_NOTHROW(build_share("glm", fmt::format("data = {}\nfamily = \"categorical\"\n", csr), {}));
  CHECK_THROWS_WITH(build_share("logistic", fmt::format("data = {}\n", npy), {1, 2}),
                    Catch::Matchers::Contains("auto tells the coding from every row's label"));
  CHECK_NOTHROW(build_share("logistic", fmt::format("data = {}\n", npy), {}));  // one process reads every label
  CHECK_THROWS_WITH(build_share("glm", fmt::format("data = {}\nfamily = \"categorical\"\n", npy), {0, 2}),
                    Catch::Matchers::Contains("family categorical counts the classes of every row's label"));
  CHECK_THROWS_WITH(build_share("mlp", fmt::format("data = {}\n", npy), {1, 2}),
                    Catch::Matchers::Contains("family categorical counts the classes of every row's label"));
  CHECK_NOTHROW(build_share("mlp", fmt::format("data = {}\n", npy), {}));
  CHECK_THROWS_WITH(build_share("logistic", "n = 10\ntest_size = 8\n", {0, 3}),
                    Catch::Matchers::Contains("2 training rows cannot be shared by 3 ranks"));
}
