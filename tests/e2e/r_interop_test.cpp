// Runs of every shipped model, made by the real CLI, read by the R tools Stan users have:
// rstan::read_stan_csv, posterior::as_draws and bayesplot::mcmc_trace (tests/e2e/read_with_rstan.R,
// run with Debian's Rscript, which third_party/setup.sh installs).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "support.hpp"

import sgmcmc;

namespace fs = std::filesystem;

namespace {

/// rstan's name of a column: "beta.1" → "beta[1]", "phi.2.3" → "phi[2,3]" (its dotfnames_to_sqrfnames).
std::string rstan_name(const std::string& name) {
  const auto dot = name.find('.');
  if (dot == std::string::npos) return name;
  std::string indices = name.substr(dot + 1);
  for (char& c : indices) c = c == '.' ? ',' : c;
  return name.substr(0, dot) + "[" + indices + "]";
}

/// A tab-separated table written by read_with_rstan.R: header → column of texts.
std::map<std::string, std::vector<std::string>> read_table(const fs::path& path) {
  const auto lines = test::lines_of(test::read_text(path));
  REQUIRE(!lines.empty());
  std::vector<std::string> header;
  std::map<std::string, std::vector<std::string>> table;
  for (std::size_t k = 0; k < lines.size(); ++k) {
    std::vector<std::string> fields;
    std::size_t start = 0;
    for (std::size_t tab; (tab = lines[k].find('\t', start)) != std::string::npos; start = tab + 1)
      fields.push_back(lines[k].substr(start, tab - start));
    fields.push_back(lines[k].substr(start));
    if (k == 0) {
      header = fields;
      continue;
    }
    REQUIRE(fields.size() == header.size());
    for (std::size_t j = 0; j < fields.size(); ++j) table[header[j]].push_back(fields[j]);
  }
  return table;
}

struct ModelRun {
  const char* name;
  std::string arguments;  // a small run of the model's preset
  std::uint64_t chains, warmup, iterations, thin;
};

}  // namespace

TEST_CASE("rstan, posterior and bayesplot read every model's chains, and the numbers round-trip") {
  if (test::shell("command -v Rscript").exit_code != 0)
    FAIL("Rscript is missing: third_party/setup.sh installs r-base-core, r-cran-rstan, r-cran-posterior and "
         "r-cran-bayesplot");
  const std::string lda_corpus = "--set model.topics=4 --set model.true_topics=3 --set model.docs=100 --set model.words=30";
  const std::vector<ModelRun> runs = {
      // lp__ computed for two models (rstan then has a log density), 0 for "not computed" for the
      // others: with a NaN there, bayesplot::mcmc_trace on the whole array stops ("NAs not allowed").
      // Every run uses the defaults of its preset otherwise.
      {"gaussian", "--preset gaussian-obabo-mh --set run.eval_every=50 --set run.lp=true", 2, 100, 300, 10},
      {"logistic", "--preset covtype-sgld --set model.n=2000 --set run.eval_every=50", 2, 50, 200, 5},
      // pmf names U.<user>.<k> and V.<item>.<k> by the data's ids and leaves out items without a
      // training rating; rstan needs complete arrays, so every item here has ratings (300 of 600 pairs).
      {"pmf", "--preset pmf-sgld --set model.users=30 --set model.items=20 --set model.ratings=300 --set model.rank=2 "
              "--set estimator.batch_size=50 --set run.eval_every=10 --set run.lp=true",
       2, 20, 40, 4},
      {"lda", "--preset lda-sgld " + lda_corpus + " --set run.eval_every=10", 3, 10, 30, 10},
  };
  test::TempDir dir;
  std::string folders;
  for (const auto& run : runs) {
    const auto out = dir.path() / run.name;
    const auto result = test::run_cli(fmt::format("run {} --chains {} --set run.warmup={} --set run.iterations={} "
                                                  "--set run.thin={} --seed 3 --out '{}' --quiet",
                                                  run.arguments, run.chains, run.warmup, run.iterations, run.thin,
                                                  out.string()));
    INFO(result.output);
    REQUIRE(result.exit_code == 0);
    folders += fmt::format(" '{}'", out.string());
  }
  const auto r = test::shell(fmt::format("Rscript '{}/tests/e2e/read_with_rstan.R' '{}'{}", SGMCMC_SOURCE_DIR,
                                         dir.path().string(), folders));
  INFO(r.output);
  REQUIRE(r.exit_code == 0);

  for (const auto& run : runs) {
    INFO(run.name);
    const auto out = dir.path() / run.name;
    const auto manifest = nlohmann::json::parse(test::read_text(out / "manifest.json"));

    // What rstan and posterior make of the files: as many chains and draws as the run wrote, the
    // warmup and thin of the comment block, and the chains' own warmup and sampling seconds.
    const auto fit = read_table(dir.path() / (std::string(run.name) + "-fit.tsv"));
    REQUIRE(fit.at("chains").size() == run.chains);
    for (std::size_t chain = 0; chain < run.chains; ++chain) {
      CHECK(fit.at("chains")[chain] == std::to_string(run.chains));
      CHECK(fit.at("draws_per_chain")[chain] == std::to_string(run.iterations / run.thin));
      CHECK(fit.at("warmup")[chain] == std::to_string(run.warmup));
      CHECK(fit.at("thin")[chain] == std::to_string(run.thin));
      // The manifest's seconds are the chain's total. The chain file prints warmup and sampling
      // seconds to 6 decimals each (at most 5e-7 off apiece), so their sum is within 1e-6 of the
      // total; 2e-6 leaves the same again for R's reading of those decimals.
      const double warmup = std::stod(fit.at("warmup_seconds")[chain]), sampling = std::stod(fit.at("sampling_seconds")[chain]);
      CHECK(warmup > 0.0);
      CHECK(sampling > 0.0);
      CHECK(std::abs(warmup + sampling - manifest["chains"][chain]["seconds"].get<double>()) <= 2e-6);
    }

    // Every value rstan read equals the file's: each column under rstan's name, chain by chain, to
    // within one unit in the last place. R parses decimals with its own R_strtod, which its
    // documentation (?NumericConstants) promises accurate to 15 significant digits only, not
    // correctly rounded: "17.2243731958563" came back as 17.224373195856302, the next double up.
    // One ulp still catches every real error (a lost digit, a shifted column, a wrong chain).
    const auto draws = read_table(dir.path() / (std::string(run.name) + "-draws.tsv"));
    std::size_t compared = 0;
    for (std::size_t chain = 0; chain < run.chains; ++chain) {
      const auto csv = sgmcmc::read_stan_csv(out / fmt::format("chain-{}.csv", chain + 1));
      REQUIRE(csv.rows.size() == run.iterations / run.thin);
      for (std::size_t column = 0; column < csv.columns.size(); ++column) {
        const auto& name = csv.columns[column];
        if (name == "accept_stat__" || name == "stepsize__") continue;  // rstan keeps these as sampler parameters
        const auto& texts = draws.at(rstan_name(name));
        for (std::size_t row = 0; row < csv.rows.size(); ++row) {
          const double expected = csv.rows[row][column];
          const double read = std::strtod(texts[chain * csv.rows.size() + row].c_str(), nullptr);
          const bool equal = read == expected || std::nextafter(expected, read) == read;  // at most 1 ulp apart
          if (std::isnan(expected) ? !std::isnan(read) : !equal)
            FAIL(fmt::format("chain {} draw {} column {}: the file says {}, rstan read {}", chain + 1, row + 1, name,
                             expected, texts[chain * csv.rows.size() + row]));
          ++compared;
        }
      }
    }
    CHECK(compared > 0);

    const auto trace = test::read_text(dir.path() / (std::string(run.name) + "-trace.png"));
    CHECK(trace.starts_with("\x89PNG"));
  }
}
