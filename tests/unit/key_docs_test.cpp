// The docs' key tables against the field tables they describe (sgmcmc.fields): runners/README.md's
// tables of estimator, integrator and corrector keys, each between its markers, must have one row
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

/// The README's table of `section` keys against key_table(catalogue), row by row.
template <class Catalogue>
void check_key_table(const std::string& section, const Catalogue& catalogue) {
  const auto code = sgmcmc::key_table(catalogue);
  const auto docs = readme_key_rows(section);
  CHECK(!code.empty());
  for (std::size_t i = 0; i < std::max(code.size(), docs.size()); ++i) {
    if (i >= code.size()) {
      FAIL_CHECK("runners/README.md documents a key no " << section << " reads: " << docs[i].front());
      continue;
    }
    const sgmcmc::KeyDoc& key = code[i].key;
    const std::vector<std::string> expected = {fmt::format("`{}`", key.key), key.default_value, key.constraint,
                                               sgmcmc::used_by_text(code[i], catalogue), key.doc};
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

}  // namespace

TEST_CASE("runners/README.md's table of integrator keys says what the integrators' field tables say") {
  check_key_table("integrator", sgmcmc::integrator_catalogue());
}

TEST_CASE("runners/README.md's table of estimator keys says what the estimators' field tables say") {
  check_key_table("estimator", sgmcmc::estimator_catalogue());
}

TEST_CASE("runners/README.md's table of corrector keys says what the correctors' field tables say") {
  check_key_table("corrector", sgmcmc::corrector_catalogue());
}
