// The docs' key tables against the field tables they describe (sgmcmc.fields): runners/README.md's
// tables of estimator, integrator, corrector, run and output keys, each between its markers, must have one row
// per documented key, in the catalogue's order, with the key, default, constraint, readers and doc
// the code declares. A row that disagrees fails with the row the code would have.
#include <catch2/catch.hpp>
#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <fmt/format.h>

import sgmcmc;

namespace {

std::string trimmed(const std::string& text) {
  const auto first = text.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(' ') - first + 1);
}

/// The cells of a markdown table row "| a | b |", trimmed; a key's backticks are part of its cell.
std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells;
  std::stringstream stream(line.substr(1));  // after the leading '|'
  for (std::string cell; std::getline(stream, cell, '|');) cells.push_back(trimmed(cell));
  return cells;
}

/// The rows of the table between "<!-- {section} keys: begin -->" and its end marker, without its
/// header and rule.
std::vector<std::vector<std::string>> readme_key_rows(const std::string& section) {
  const std::string begin_marker = fmt::format("<!-- {} keys: begin -->", section);
  const std::string end_marker = fmt::format("<!-- {} keys: end -->", section);
  std::ifstream readme(std::string(SGMCMC_SOURCE_DIR) + "/runners/README.md");
  REQUIRE(readme);
  std::vector<std::vector<std::string>> rows;
  bool inside = false, begun = false;
  for (std::string line; std::getline(readme, line);) {
    if (line == begin_marker) inside = begun = true;
    else if (line == end_marker) inside = false;
    else if (inside && line.starts_with("| `")) rows.push_back(cells_of(line));
  }
  INFO("runners/README.md has no line " << begin_marker);
  CHECK(begun);
  return rows;
}

/// The README's table of `section` keys against the rows the code would have, row by row.
void check_rows(const std::string& section, const std::vector<std::vector<std::string>>& code) {
  const auto docs = readme_key_rows(section);
  CHECK(!code.empty());
  for (std::size_t i = 0; i < std::max(code.size(), docs.size()); ++i) {
    if (i >= code.size()) {
      FAIL_CHECK("runners/README.md documents a key no " << section << " reads: " << docs[i].front());
      continue;
    }
    const std::vector<std::string>& expected = code[i];
    const std::string row = fmt::format("| {} |", fmt::join(expected, " | "));
    if (i >= docs.size()) {
      FAIL_CHECK("runners/README.md lacks row " << i + 1 << " of its " << section << " keys:\n" << row);
      continue;
    }
    INFO("row " << i + 1 << " of the " << section << " keys should read:\n" << row);
    CHECK(docs[i].size() == expected.size());
    for (std::size_t column = 0; column < std::min(docs[i].size(), expected.size()); ++column) CHECK(docs[i][column] == expected[column]);
  }
}

/// A catalogue's keys: key, default, constraint, the entries that read it, doc.
template <class Catalogue>
void check_key_table(const std::string& section, const Catalogue& catalogue) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& row : sgmcmc::key_table(catalogue))
    rows.push_back({fmt::format("`{}`", row.key.key), row.key.default_value, row.key.constraint,
                    sgmcmc::used_by_text(row, catalogue), row.key.doc});
  check_rows(section, rows);
}

}  // namespace

TEST_CASE("runners/README.md's table of integrator keys says what the integrators' field tables say") {
  check_key_table("integrator", sgmcmc::integrator_catalogue());
}

TEST_CASE("runners/README.md's table of estimator keys says what the estimators' field tables say") {
  check_key_table("estimator", sgmcmc::estimator_catalogue());
}

/// A section's keys without a catalogue: key, default, constraint, doc.
void check_key_docs(const std::string& section, const std::vector<sgmcmc::KeyDoc>& keys) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& key : keys) rows.push_back({fmt::format("`{}`", key.key), key.default_value, key.constraint, key.doc});
  check_rows(section, rows);
}

TEST_CASE("runners/README.md's table of run keys says what the run section's field tables say") {
  check_key_docs("run", sgmcmc::run_key_docs());
}

TEST_CASE("runners/README.md's table of output keys says what the output section's field table says") {
  check_key_docs("output", sgmcmc::key_docs(sgmcmc::output_fields()));
}

TEST_CASE("runners/README.md's table of corrector keys says what the correctors' field tables say") {
  check_key_table("corrector", sgmcmc::corrector_catalogue());
}
