// Numeric CSV reading (errors with file:line:column), Stan CSV writing, and random streams.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "model_support.hpp"
#include "support.hpp"

import sgmcmc;

using Catch::Matchers::Contains;

TEST_CASE("numeric CSV: optional header, CRLF line ends, blank lines") {
  test::TempDir dir;
  const auto with_header = sgmcmc::read_numeric_csv(dir.write("h.csv", "y,x1,x2\r\n1,2,3\r\n\r\n4,5,+6e-1\r\n"));
  CHECK(with_header.header == std::vector<std::string>{"y", "x1", "x2"});
  CHECK(with_header.rows == 2);
  CHECK(with_header.columns == 3);
  CHECK(with_header.at(1, 2) == 0.6);
  const auto bare = sgmcmc::read_numeric_csv(dir.write("b.csv", "1, 2\n3 ,4\n"));
  CHECK(bare.header.empty());
  CHECK(bare.rows == 2);
  CHECK(bare.at(1, 0) == 3.0);
}

TEST_CASE("numeric CSV errors name file, line and column") {
  test::TempDir dir;
  const auto bad = dir.write("bad.csv", "1,2,3\n4,x5,6\n");
  CHECK_THROWS_WITH(sgmcmc::read_numeric_csv(bad), Contains("bad.csv:2:3: 'x5' is not a number"));
  const auto ragged = dir.write("ragged.csv", "a,b\n1,2\n3,4,5\n");
  CHECK_THROWS_WITH(sgmcmc::read_numeric_csv(ragged), Contains("ragged.csv:3: 3 fields, expected 2"));
  const auto empty = dir.write("empty.csv", "a,b\n");
  CHECK_THROWS_WITH(sgmcmc::read_numeric_csv(empty), Contains("empty.csv: no data rows"));
  CHECK_THROWS_WITH(sgmcmc::read_numeric_csv(dir.path() / "missing.csv"), Contains("missing.csv: cannot open"));
}

TEST_CASE("numeric CSV: NaN, infinities and numbers beyond a double are errors naming file:line:column") {
  test::TempDir dir;
  CHECK_THROWS_WITH(sgmcmc::read_numeric_csv(dir.write("nan.csv", "1,2\n3,nan\n")),
                    Contains("nan.csv:2:3: 'nan' is not a finite number"));
  CHECK_THROWS_WITH(sgmcmc::read_numeric_csv(dir.write("inf.csv", "y,x\n1,2\n-inf,4\n")),
                    Contains("inf.csv:3:1: '-inf' is not a finite number"));
  CHECK_THROWS_WITH(sgmcmc::read_numeric_csv(dir.write("big.csv", "1,2\n3,1e400\n")),
                    Contains("big.csv:2:3: '1e400' is beyond the range of a double"));
}

TEST_CASE("numeric CSV: a header is non-numeric in every field, anything else on line 1 is data") {
  test::TempDir dir;
  // A first line with a typo or an overflowing number was taken for a header and dropped.
  CHECK_THROWS_WITH(sgmcmc::read_numeric_csv(dir.write("typo.csv", "1,0.2x\n3,4\n")),
                    Contains("typo.csv:1:3: '0.2x' is not a number"));
  CHECK_THROWS_WITH(sgmcmc::read_numeric_csv(dir.write("big.csv", "1e400,2\n3,4\n")),
                    Contains("big.csv:1:1: '1e400' is beyond the range of a double"));
  CHECK_THROWS_WITH(sgmcmc::read_numeric_csv(dir.write("mixed.csv", "y,2\n3,4\n")),
                    Contains("mixed.csv:1:1: 'y' is not a number"));
  // A UTF-8 byte-order mark (as spreadsheet programs write) is not part of the first field.
  const auto bom_data = sgmcmc::read_numeric_csv(dir.write("bom.csv", "\xEF\xBB\xBF" "1,2\n3,4\n"));
  CHECK(bom_data.header.empty());
  CHECK(bom_data.rows == 2);
  CHECK(bom_data.at(0, 0) == 1.0);
  const auto bom_header = sgmcmc::read_numeric_csv(dir.write("bomh.csv", "\xEF\xBB\xBF" "y,x\n3,4\n"));
  CHECK(bom_header.header == std::vector<std::string>{"y", "x"});
  CHECK(bom_header.rows == 1);
}

TEST_CASE("text lines: a NUL byte is an error naming file:line, not a join of two lines") {
  test::TempDir dir;
  const auto nul = dir.write("nul.csv", "1,2\n3,4" + std::string(1, '\0') + "\n5,6\n7,8\n");
  CHECK_THROWS_WITH(sgmcmc::read_numeric_csv(nul), Contains("nul.csv:2:4: a NUL byte"));
  sgmcmc::TextLines lines(nul);
  std::string line;
  REQUIRE(lines.next(line));
  CHECK(line == "1,2");
  CHECK_THROWS_WITH(lines.next(line), Contains("nul.csv:2:") && Contains("NUL byte"));
}

namespace {
/// `text` as one gzip member, written by zlib's gzip writer (not by the reader under test).
std::string gzip_member(const std::string& text) {
  test::TempDir dir;
  const auto path = dir.path() / "member.gz";
  test::write_gzip(path, text);
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> all_lines(const std::filesystem::path& path) {
  sgmcmc::TextLines in(path);
  std::vector<std::string> lines;
  for (std::string line; in.next(line);) lines.push_back(line);
  return lines;
}
}  // namespace

TEST_CASE("text lines: gzip members read as one file, and what follows the last member is refused, not dropped") {
  test::TempDir dir;
  const std::string first = "1,2\n3,4\n", second = "5,6\n";
  const std::vector<std::string> every_row{"1,2", "3,4", "5,6"};
  CHECK(all_lines(dir.write("plain.csv", first + second)) == every_row);
  CHECK(all_lines(dir.write("one.csv.gz", gzip_member(first + second))) == every_row);
  // RFC 1952 section 2.2: a gzip file is a series of members (`cat a.gz b.gz` is the gzip of a + b).
  CHECK(all_lines(dir.write("two.csv.gz", gzip_member(first) + gzip_member(second))) == every_row);
  // gzread stops at the first byte that is not gzip and drops the rest: 5,6 vanished.
  const auto appended = dir.write("appended.csv.gz", gzip_member(first) + second);
  CHECK_THROWS_WITH(all_lines(appended), Contains(appended.string()) && Contains("not gzip follow"));
  const std::string whole = gzip_member(first + second);
  const auto cut = dir.write("cut.csv.gz", whole.substr(0, whole.size() - 6));
  CHECK_THROWS_WITH(all_lines(cut), Contains(cut.string()) && Contains("is the gzip file truncated?"));
  std::string damaged_check = whole;
  damaged_check[damaged_check.size() - 6] ^= 0x5a;  // inside the trailer's CRC-32
  const auto damaged = dir.write("damaged.csv.gz", damaged_check);
  CHECK_THROWS_WITH(all_lines(damaged), Contains(damaged.string()) && Contains("damaged gzip stream"));
  // A text file of one byte, or starting with 0x1f alone, is text.
  CHECK(all_lines(dir.write("short.csv", "7")) == std::vector<std::string>{"7"});
}

TEST_CASE("text lines: a folder given as a data file says so") {
  test::TempDir dir;
  CHECK_THROWS_WITH(sgmcmc::read_numeric_csv(dir.path()), Contains(dir.path().string() + ": is a folder, not a data file"));
}

TEST_CASE("Stan CSV: comments, header, draws that read back to the same doubles") {
  test::TempDir dir;
  const std::vector<std::string> comments{"seed = 3"}, sampler{"lp__", "accept_stat__", "stepsize__"}, names{"beta.1", "beta.2"};
  sgmcmc::StanCsvWriter writer(dir.path() / "c.csv", comments, sampler, names);
  const double third = 1.0 / 3.0;
  writer.write_draw(std::vector<double>{std::nan(""), 1.0, 0.5}, std::vector<double>{third, -2e-300});
  writer.close();
  const std::string text = test::read_text(dir.path() / "c.csv");
  CHECK(text == "# seed = 3\nlp__,accept_stat__,stepsize__,beta.1,beta.2\nnan,1,0.5,0.3333333333333333,-2e-300\n");
  double back = 0.0;
  REQUIRE(sgmcmc::parse_double("0.3333333333333333", back));
  CHECK(back == third);
}

TEST_CASE("random streams: reproducible per (seed, stream), distinct across streams") {
  sgmcmc::Rng a(7, sgmcmc::chain_stream(0)), b(7, sgmcmc::chain_stream(0)), c(7, sgmcmc::chain_stream(1));
  bool c_differs = false;
  for (int k = 0; k < 100; ++k) {
    const double x = a.normal();
    CHECK(x == b.normal());
    c_differs |= x != c.normal();
  }
  CHECK(c_differs);
}

TEST_CASE("random streams: normal and uniform moments within Monte Carlo error") {
  // n = 10^6 draws. Standard normal: the sample mean has sd 1/sqrt(n) = 1e-3 and the sample
  // variance has sd sqrt(2/n) ≈ 1.41e-3; index(10): each of the 10 cells has count sd
  // sqrt(n·0.1·0.9) = 300. Tolerances are 5 sd (two-sided p ≈ 6e-7 each).
  sgmcmc::Rng rng(2026, 1);
  const int n = 1'000'000;
  double sum = 0.0, sum_squares = 0.0;
  std::vector<int> counts(10);
  for (int k = 0; k < n; ++k) {
    const double x = rng.normal();
    sum += x;
    sum_squares += x * x;
    counts[rng.index(10)] += 1;
  }
  const double mean = sum / n;
  CHECK(std::abs(mean) < 5e-3);
  CHECK(std::abs(sum_squares / n - mean * mean - 1.0) < 5 * 1.42e-3);
  for (int count : counts) CHECK(std::abs(count - n / 10) < 5 * 300);
}
