// run.data_parallel through the real binary under mpirun: one chain whose data terms are split
// across the ranks, each rank holding only its rows (simulated or mapped from a .npy file), gives
// the one-process draws (bit for bit with one rank, to rounding with two and four), rank 0 alone
// writes the folder and records the rows each rank holds and the communication, and what is not
// split is refused at start-up with its key. Checkpoints: stopped (--stop-after, SIGTERM) or with
// a rank killed, a 2-rank job resumes bit for bit, and refuses another rank count. Under 2 ranks,
// exact + mala + mh samples the gaussian model's closed-form posterior.
#include <catch2/catch.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>
#include <sys/wait.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xtensor/xtensor.hpp>
#include <xtensor-blas/xlinalg.hpp>

#include "gaussian_fixture.hpp"
#include "mpi_support.hpp"
#include "statistics.hpp"
#include "support.hpp"

import sgmcmc;

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

/// Logistic regression on 2,000 simulated rows of cover type's shape (d = 55), one chain of 300
/// iterations with lp__ (a full potential pass per draw, through the same reduction).
std::string logistic_run(const std::string& sampler) {
  return "[model]\nname = \"logistic\"\nn = 2000\n\n" + sampler +
         "\n[run]\nwarmup = 0\niterations = 300\nthin = 1\nchains = 1\nseed = 7\neval_every = 100\nlp = true\n";
}

const std::string minibatch_sgld =
    "[estimator]\nname = \"minibatch\"\nbatch_size = 50\n[integrator]\nname = \"sgld\"\nstep_size = 1e-4\n"
    "[corrector]\nname = \"none\"\n";
#ifdef SGMCMC_MPIEXEC
// cv's centre (SGD from the start) and its full pass go through glm_scalars and add_scaled_features.
const std::string cv_sgld =
    "[estimator]\nname = \"cv\"\nbatch_size = 50\n[integrator]\nname = \"sgld\"\nstep_size = 1e-4\n"
    "[corrector]\nname = \"none\"\n";
// cv drawing its batch with p_i ∝ L_i (Baker et al. 2019, eq. 4): every rank needs every item's L_i,
// gathered from the ranks that hold the rows.
const std::string cv_lipschitz_sgld =
    "[estimator]\nname = \"cv\"\nbatch_size = 50\nsampling = \"lipschitz\"\n[integrator]\nname = \"sgld\"\n"
    "step_size = 1e-4\n[corrector]\nname = \"none\"\n";
// saga's table in the GLM form, each rank keeping its block's scalars: its first estimate is a full
// pass, then G (the table's sum) changes by the reduced sum of the batch's owned differences.
const std::string svrg_sgld =
    "[estimator]\nname = \"svrg\"\nbatch_size = 50\nperiod = 25\n[integrator]\nname = \"sgld\"\nstep_size = 1e-4\n"
    "[corrector]\nname = \"none\"\n";
const std::string saga_sgld =
    "[estimator]\nname = \"saga\"\nbatch_size = 50\n[integrator]\nname = \"sgld\"\nstep_size = 1e-4\n"
    "[corrector]\nname = \"none\"\n";
// The dense Fisher mass M = Σ_i ∇f_i ∇f_iᵀ + I at the start (what the cover type presets use): each
// rank sums its own rows' outer products, with the undecorated model, and the P sums are added.
const std::string fisher_sgld =
    "[estimator]\nname = \"minibatch\"\nbatch_size = 50\n[integrator]\nname = \"sgld\"\nstep_size = 0.01\n"
    "metric = \"dense\"\nmass = \"fisher\"\n[corrector]\nname = \"none\"\n";
// MALA: the exact gradient and U at every step's end (data_potential_and_gradient), U at the start.
const std::string exact_mala_mh =
    "[estimator]\nname = \"exact\"\n[integrator]\nname = \"mala\"\nstep_size = 2e-4\n"
    "[corrector]\nname = \"mh\"\nevery = 1\n";

sgmcmc::StanCsv draws_of(const fs::path& out) { return sgmcmc::read_stan_csv(out / "chain-1.csv"); }

/// `rows` rows of (y, x_1..x_5) as CSV, y ∈ {-1, +1} drawn from a logistic model of the x, then
/// `sgmcmc convert`ed into `name` (.npy, float64): a data file the ranks map a share of.
fs::path logistic_npy(const test::TempDir& dir, std::size_t rows, const std::string& name) {
  std::mt19937_64 engine(11);  // the standard fixes mt19937_64's sequence: the same file everywhere
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::ofstream csv(dir.path() / "rows.csv");
  for (std::size_t i = 0; i < rows; ++i) {
    double x[5], z = 0.5;
    for (std::size_t j = 0; j < 5; ++j) z += (j % 2 ? 1.5 : -1.0) * (x[j] = uniform(engine));
    csv << (uniform(engine) < 1.0 / (1.0 + std::exp(-z)) ? 1 : -1);
    for (double value : x) csv << fmt::format(",{:.17g}", value);
    csv << "\n";
  }
  csv.close();
  const auto npy = dir.path() / name;
  const auto converted = test::run_cli(fmt::format("convert '{}' '{}'", (dir.path() / "rows.csv").string(), npy.string()));
  REQUIRE_THAT(converted, test::ExitsWith(0));
  return npy;
}

/// Logistic regression on a .npy file (a tenth held out, read row by row by every rank), labels
/// coded -1/+1: `auto` would read every row's label.
std::string logistic_npy_run(const fs::path& npy, const std::string& sampler) {
  return fmt::format("[model]\nname = \"logistic\"\ndata = \"{}\"\nlabels = \"-1/+1\"\n\n{}\n[run]\nwarmup = 0\n"
                     "iterations = 300\nthin = 1\nchains = 1\nseed = 7\neval_every = 100\nlp = true\n",
                     npy.string(), sampler);
}

/// Makes `dir`/t this test's temporary folder (TMPDIR, which mpirun and the ranks inherit), so
/// that the ranks' scratch folders (sgmcmc-run-PID-rank-R) a test looks for, signals or removes
/// are those of its own jobs, never those of a test ctest runs beside it.
void own_temporary_folder(const test::TempDir& dir) {
  const auto folder = dir.path() / "t";
  fs::create_directories(folder);
  REQUIRE(setenv("TMPDIR", folder.c_str(), 1) == 0);
}

/// `mpirun -n ranks sgmcmc run --config file --out out --set run.data_parallel=true`.
test::CliResult data_parallel_run(int ranks, const fs::path& file, const fs::path& out, const std::string& extra = "") {
  return test::mpi_cli(ranks, "run --quiet --config '" + file.string() + "' --out '" + out.string() +
                                  "' --set run.data_parallel=true " + extra);
}
#endif

}  // namespace

#ifdef SGMCMC_MPIEXEC

// Why two (or four) ranks are not bit-identical to one process, and the tolerance: rank r sums the
// batch items it owns, and the P partial sums are added in rank order, so Σ_i ∇f_i is the same terms
// associated differently. Each order's rounding error is at most (n-1)·u·Σ_i |∇f_i| (u = 2^-53;
// Higham 2002, §4.2), so the two gradients differ by at most 2(n-1)·u·Σ|∇f_i|: ≈ 1e-14 of it for a
// batch of 50, ≈ 4e-13 for a full pass of N = 2,000. A step moves θ by h times that, and the
// steps do not amplify it (h·λ_max < 2 for this log-concave posterior: I - h∇²U contracts), so
// after K = 300 steps the draws differ by at most K·h·(that bound), far below 1e-12 of each
// parameter's scale. saga's table sum G is updated in place, so its rounding accumulates: after K
// steps at most K times one update's, 2K(n-1)·u·Σ|Δ| ≈ 3e-12 of the batch's gradient scale, which
// moves θ by h times that. ΔH̃, a difference of two potentials of order |U| (here |lp__| ≈ 1,200 against
// ΔH̃ of order 1), differs by |U|'s rounding, so its column and accept_stat__'s are compared on
// lp__'s scale (two ranks measured 4e-11 absolute in ΔH̃: 7e-12 of ΔH̃'s own scale, 3e-14 of U's). A
// MH decision flips only when u lands within that distance of α (probability of the same order).
// The dense Fisher mass M = Σ_i g_i g_iᵀ + I is summed once, at the start, in the same two orders:
// its entries differ by at most 2(N-1)·u·Σ_i|g_i g_iᵀ| (4.4e-13 of them at N = 2,000), and every
// step's M⁻¹ĝ by at most κ(M) times that; here λ_min(M) = 1 (Σ g gᵀ is singular: the one-hot
// groups each sum to the intercept column) and λ_max(M) ≤ 1 + Σ_i |g_i|² ≤ 1 + 13N (|σ - y| ≤ 1,
// |x_i|² ≤ 13), so κ(M) may reach 10⁴ and the worst case is not below 1e-12. The draws are a deterministic function of the seed: measured,
// they differ by 6.1e-14 (2 ranks) and 4.1e-14 (4 ranks) of their scale, the errors of the sum
// being of both signs (of order √N·u, Higham 2002 §4.2) rather than the worst case. One rank
// sums exactly as the undecorated model (rank 0's part is added onto
// the caller's vector): bit for bit. Holding only its rows changes none of this: a rank's block
// is the same items, evaluated by the same code, as the rank's part of the whole data set.
/// `compared`: how many of the 300 draws of 2 and 4 ranks are held to 1e-12 (all of them but for a
/// chain that amplifies rounding: lda, below).
void check_one_process_draws(const test::TempDir& dir, const fs::path& file, const std::string& label,
                             std::size_t compared = 300) {
  const auto alone = test::run_cli("run --quiet --config '" + file.string() + "' --out '" + (dir.path() / "alone").string() + "'");
  INFO(alone.output);
  REQUIRE_THAT(alone, test::ExitsWith(0));
  const auto reference = draws_of(dir.path() / "alone");
  REQUIRE(reference.rows.size() == 300);
  REQUIRE(reference.columns.front() == "lp__");

  const auto one = data_parallel_run(1, file, dir.path() / "one");
  INFO(one.output);
  REQUIRE_THAT(one, test::ExitsWith(0));
  CHECK(draws_of(dir.path() / "one").rows == reference.rows);  // bit for bit

  const auto scale_of = [&](std::size_t j) {
    double scale = 0.0;
    for (const auto& row : reference.rows) scale = std::max(scale, std::abs(row[j]));
    return scale;
  };
  for (const int ranks : {2, 4}) {
    INFO(ranks << " ranks");
    const auto out = dir.path() / fmt::format("ranks-{}", ranks);
    const auto split_run = data_parallel_run(ranks, file, out);
    INFO(split_run.output);
    REQUIRE_THAT(split_run, test::ExitsWith(0));
    const auto split = draws_of(out);
    REQUIRE(split.columns == reference.columns);
    REQUIRE(split.rows.size() == reference.rows.size());
    double worst = 0.0;  // the largest difference, as a fraction of its column's scale
    for (std::size_t j = 0; j < reference.columns.size(); ++j) {
      // ΔH̃ = U(θ_K) - U(θ_0) + ... and accept_stat__ = min(1, exp(-ΔH̃)) (whose slope is at most 1)
      // carry the rounding of the two potentials, which is of U's scale (lp__'s), not of their own.
      const bool from_potentials = reference.columns[j] == "delta_energy__" || reference.columns[j] == "accept_stat__";
      const double scale = from_potentials ? scale_of(0) : scale_of(j);
      for (std::size_t k = 0; k < compared; ++k)
        if (scale > 0) worst = std::max(worst, std::abs(split.rows[k][j] - reference.rows[k][j]) / scale);
    }
    INFO("largest difference from the one-process draws, relative to the column's scale: " << worst);
    CHECK(worst <= 1e-12);
    // Each rank held its block of the training rows, no more (what the model holds, gathered).
    const auto manifest = nlohmann::json::parse(test::read_text(out / "manifest.json"));
    const std::size_t items = manifest["model"]["items"];
    const auto rows = manifest["data_parallel"]["rows_per_rank"].get<std::vector<std::size_t>>();
    REQUIRE(rows.size() == static_cast<std::size_t>(ranks));
    for (std::size_t r = 0; r < rows.size(); ++r)
      CHECK(rows[r] == sgmcmc::row_block_start(items, r + 1, rows.size()) - sgmcmc::row_block_start(items, r, rows.size()));
  }
  if (label.ends_with("exact + mala + mh")) {  // both branches of the MH test were taken
    const auto accepted = std::count_if(reference.rows.begin(), reference.rows.end(), [&](const auto& row) {
      return row[4] == 1.0;
    });
    CHECK(accepted > 0);
    CHECK(accepted < 300);
  }
}

TEST_CASE("mpirun -n 1, 2 and 4 data-parallel runs give the one-process draws") {
  for (const auto& [label, sampler] : {std::pair{"minibatch + sgld", minibatch_sgld}, std::pair{"cv + sgld", cv_sgld},
                                      std::pair{"svrg + sgld", svrg_sgld},
                                      std::pair{"saga + sgld", saga_sgld}, std::pair{"exact + mala + mh", exact_mala_mh},
                                      std::pair{"minibatch + sgld, dense Fisher mass", fisher_sgld}}) {
    INFO(label);
    test::TempDir dir;
    check_one_process_draws(dir, dir.write("run.toml", logistic_run(sampler)), label);
  }
}

TEST_CASE("data-parallel runs on a .npy file, each rank mapping only its rows, give the one-process draws") {
  for (const auto& [label, sampler] : {std::pair{"minibatch + sgld", minibatch_sgld},
                                      std::pair{"cv (lipschitz sampling) + sgld", cv_lipschitz_sgld},
                                      std::pair{"saga + sgld", saga_sgld}, std::pair{"exact + mala + mh", exact_mala_mh},
                                      std::pair{"minibatch + sgld, dense Fisher mass", fisher_sgld}}) {
    INFO(label);
    test::TempDir dir;
    const auto npy = logistic_npy(dir, 3000, "rows.npy");
    check_one_process_draws(dir, dir.write("run.toml", logistic_npy_run(npy, sampler)), label);
  }
}

TEST_CASE("data-parallel runs on a .csr folder, each rank mapping only its rows, give the one-process draws") {
  for (const auto& [label, sampler] : {std::pair{"minibatch + sgld", minibatch_sgld}, std::pair{"exact + mala + mh", exact_mala_mh}}) {
    INFO(label);
    test::TempDir dir;
    const auto csr = logistic_npy(dir, 3000, "rows.csr");  // `sgmcmc convert` writes the layout the name asks for
    check_one_process_draws(dir, dir.write("run.toml", logistic_npy_run(csr, sampler)), label);
  }
}

TEST_CASE("a data-parallel run's folder is rank 0's, and its manifest records the ranks and the communication") {
  test::TempDir dir;
  const auto file = dir.write("run.toml", logistic_run(minibatch_sgld));
  const auto out = dir.path() / "two";
  const auto result = data_parallel_run(2, file, out);
  INFO(result.output);
  REQUIRE_THAT(result, test::ExitsWith(0));
  const auto manifest = nlohmann::json::parse(test::read_text(out / "manifest.json"));
  const std::size_t items = manifest["model"]["items"], d = manifest["model"]["dimension"];
  const auto& record = manifest["data_parallel"];
  CHECK(record["ranks"] == 2);
  CHECK(record["items"] == items);
  // What each rank's model holds, gathered: its half of the simulated training rows.
  CHECK(record["rows_per_rank"] == std::vector<std::size_t>{items / 2, items - items / 2});
  // Per iteration: one gather of the minibatch gradient (d doubles) and, for lp__, one of the
  // potential (1 double), each carrying one more double, the rank's stop flag (SIGTERM); a gather
  // of m + 1 doubles on 2 ranks counts 2·(m + 1).
  CHECK(record["reductions_per_iteration"] == 2.0);
  CHECK(record["bytes_per_iteration"] == static_cast<double>(2 * (d + 1 + 2) * sizeof(double)));
  CHECK(record["communication_seconds_per_iteration"].get<double>() >= 0.0);
  CHECK(manifest["chains"][0]["iterations"] == 300);
  // The run's files once, in its folder; the other rank's scratch copy is gone.
  CHECK(fs::exists(out / "chain-1.csv"));
  CHECK(!fs::exists(out / "chain-2.csv"));
}

TEST_CASE("run.data_parallel refuses what stage 1 does not split, once and naming the key") {
  test::TempDir dir;
  const auto file = dir.write("run.toml", logistic_run(minibatch_sgld));
  const std::pair<std::string, std::string> refusals[] = {
      {"--set model.name=mlp --set estimator.name=saga",
       "estimator.name: 'saga' on a model without the glm-gradients capability is not yet supported"},
      {"--set run.chains=2", "run.chains: 2 chains is not yet supported with run.data_parallel"},
      {"--set model.n=10 --set model.test_size=9", "1 training rows cannot be shared by 2 ranks of a data-parallel run"}};
  for (const auto& [settings, message] : refusals) {
    const auto result = data_parallel_run(2, file, dir.path() / "refused", settings);
    INFO(result.output);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.output, Contains(message));
    // Rank 0 speaks for both: the refusal is the same on every rank.
    CHECK(result.output.find(message) == result.output.rfind(message));
    CHECK(!fs::exists(dir.path() / "refused" / "manifest.json"));
  }
}

TEST_CASE("a data-parallel run on a .npy file refuses labels = auto, which would read every row's label") {
  test::TempDir dir;
  auto config = logistic_npy_run(logistic_npy(dir, 100, "few.npy"), minibatch_sgld);
  config.replace(config.find("labels = \"-1/+1\"\n"), std::string("labels = \"-1/+1\"\n").size(), "");
  const auto result = data_parallel_run(2, dir.write("run.toml", config), dir.path() / "refused");
  INFO(result.output);
  CHECK(result.exit_code == 2);
  const std::string message = "auto tells the coding from every row's label, and a rank of a data-parallel run reads "
                              "only its rows of";
  CHECK_THAT(result.output, Contains(message));
  CHECK(result.output.find(message) == result.output.rfind(message));
  // One process reads every label: auto is allowed there.
  const auto alone = test::run_cli("run --quiet --config '" + (dir.path() / "run.toml").string() + "' --out '" +
                                   (dir.path() / "alone").string() + "'");
  CHECK_THAT(alone, test::ExitsWith(0));
}

TEST_CASE("a NaN in one rank's rows of a .npy file ends the data-parallel job naming the file and the element") {
  // Only rank 1 maps row 2,900 of 3,000: its refusal alone must reach the user, the other rank not
  // waiting for it forever (mpi_cli's timeout would fail the test with 124).
  test::TempDir dir;
  const std::size_t rows = 3000, columns = 4;
  std::vector<double> values;
  for (std::size_t i = 0; i < rows; ++i)
    values.insert(values.end(), {i % 3 ? 1.0 : -1.0, 0.001 * static_cast<double>(i), std::sin(static_cast<double>(i)),
                                 i == 2900 ? std::nan("") : 0.5});
  std::string header = fmt::format("{{'descr': '<f8', 'fortran_order': False, 'shape': ({}, {}), }}", rows, columns);
  header += std::string((64 - (10 + header.size() + 1) % 64) % 64, ' ') + "\n";
  const auto npy = dir.path() / "nan.npy";
  {
    std::ofstream out(npy, std::ios::binary);
    out.write("\x93NUMPY\x01\x00", 8);
    const char length[2] = {static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
    out.write(length, 2);
    out << header;
    out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(double)));
  }
  for (const char* sampling : {"uniform", "lipschitz"}) {
    INFO(sampling);
    const auto config = dir.write("run.toml", logistic_npy_run(npy, fmt::format("[estimator]\nname = \"cv\"\nsampling = \"{}\"\n", sampling)));
    const auto result = data_parallel_run(2, config, dir.path() / "nan");
    INFO(result.output);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.output, Contains("nan.npy: a[2900, 3] is nan; every value must be finite"));
    CHECK(!fs::exists(dir.path() / "nan" / "manifest.json"));
  }
}

TEST_CASE("pmf drawing its noise precision τ in a Gibbs step: 1, 2 and 4 ranks give the one-process draws") {
  // Every iteration (gibbs_every = 1) draws τ | θ ~ Gamma(a + N/2, b + ½ Σ e²): each rank sums the
  // squared residuals of its block of ratings and the P sums are added in rank order (ItemSums), so
  // τ carries the rounding of one sum of N terms associated differently, 2(N-1)·u of it at most,
  // as a gradient does (the bound above). The Gamma draw is continuous in its rate (the same
  // uniforms, its accept-reject test reads the shape alone), so the chains stay that close. τ
  // changes the data terms: cv then recomputes ∇U(θ̂) with a full pass, reduced like any other.
  // cv is given its SGD step: the automatic one, h_0 = 1/λ̂, estimates λ̂ from finite differences
  // of minibatch gradients, [∇Û(θ + δv) - ∇Û(θ)]/δ with δ = 1e-4·(1 + ‖θ‖), which divide the sums'
  // rounding by δ, and 8 SGD steps on pmf's non-convex potential carry that into θ̂: measured at
  // the first draw, 6e-14 to 8.4e-13 of a column's scale over seeds 1-6 (2 ranks), and 1.2e-12 on
  // another batch stream, against 7e-16 to 1.2e-15 with the step given (seeds 1-7, 2 and 4 ranks).
  // With the ranks' sums not added, 2 ranks draw τ from half the squares and part at once.
  const std::string model =
      "[model]\nname = \"pmf\"\nusers = 40\nitems = 25\nratings = 400\nrank = 2\ngibbs_every = 1\n"
      "noise_prior_shape = 2\n";
  const std::string run = "[run]\nwarmup = 0\niterations = 300\nthin = 1\nchains = 1\nseed = 7\neval_every = 100\nlp = true\n";
  for (const auto& [label, estimator] : {std::pair{"pmf, minibatch + sgld", "name = \"minibatch\"\nbatch_size = 50\n"},
                                        std::pair{"pmf, cv + sgld", "name = \"cv\"\nbatch_size = 50\nsgd_step_size = 0.04\n"}}) {
    INFO(label);
    test::TempDir dir;
    const auto file = dir.write("run.toml", model + "[estimator]\n" + estimator +
                                                "[integrator]\nname = \"sgld\"\nstep_size = 1e-3\n[corrector]\nname = \"none\"\n" + run);
    check_one_process_draws(dir, file, label);
  }
  // The same on a ratings .npy (`sgmcmc convert --ratings`), which each rank streams, keeping only
  // its block and the held-out ratings.
  test::TempDir dir;
  std::string lines;
  for (int user = 1; user <= 40; ++user)
    for (int k = 0; k < 10; ++k) lines += fmt::format("{}\t{}\t{}\n", user, (user * 7 + k * 5) % 25 + 1, 1 + (user + k) % 5);
  const auto text = dir.write("u.data", lines), npy = dir.path() / "u.npy";
  REQUIRE_THAT(test::run_cli(fmt::format("convert --ratings '{}' '{}'", text.string(), npy.string())), test::ExitsWith(0));
  const auto file = dir.write("run.toml", fmt::format("[model]\nname = \"pmf\"\ndata = \"{}\"\nrank = 2\ngibbs_every = 1\n"
                                                      "noise_prior_shape = 2\n[estimator]\nname = \"minibatch\"\nbatch_size = 50\n"
                                                      "[integrator]\nname = \"sgld\"\nstep_size = 1e-3\n[corrector]\nname = \"none\"\n{}",
                                                      npy.string(), run));
  check_one_process_draws(dir, file, "pmf on a ratings .npy, minibatch + sgld");
}

TEST_CASE("lda, whose gradient Gibbs-samples each document's topics: 1, 2 and 4 ranks give the one-process draws") {
  // Each rank samples the topics of the batch's documents it holds, document d from the stream
  // (key, d), the key one draw of the chain's stream per gradient on every rank, so a document's
  // topics are the one-process run's given the same θ, and one rank's draws are the one-process
  // run's bit for bit. With 2 and 4 ranks each gradient carries the rounding bounded above, but
  // this chain amplifies it: SGLD on lda's positive θ expands along the small entries, whose
  // curvature n/θ² exceeds 2/ε, and the reflection at 0 folds them back, so differences grew about
  // 1.4 times per iteration (measured: 1e-15 after one, 1e-10 after 30, O(1) after 150). So with
  // minibatch the first 10 draws are held to 1e-12 (measured 4.3e-13 and 2.9e-13 of a column's
  // scale). cv adds, before its first draw, a centring phase and 4 Gibbs-estimated full passes,
  // whose sums over every document round further (measured after 10 draws: 1.1e-11 and 1.8e-11,
  // in the smallest entries): its 2- and 4-rank runs are checked to complete, their streams
  // compared at every gradient (the next test), and its one rank bit for bit. Broken: the
  // batch's documents drawn one after another from one stream per call, (key, 0), 2 and 4 ranks
  // land 2.0 and 5.0 of a column's scale away.
  const std::string model =
      "[model]\nname = \"lda\"\ntopics = 3\ndocs = 200\nwords = 40\ndoc_length = 20\ntest_docs = 20\n";
  const std::string run = "[run]\nwarmup = 0\niterations = 300\nthin = 1\nchains = 1\nseed = 7\neval_every = 100\n";
  const std::string sgld = "[integrator]\nname = \"sgld\"\nstep_size = 1e-2\n[corrector]\nname = \"none\"\n";
  for (const auto& [label, estimator, compared] :
       {std::tuple{"lda, minibatch + sgld", "name = \"minibatch\"\nbatch_size = 20\n", std::size_t{10}},
        std::tuple{"lda, cv (a 5-step SGLD centring, 4 passes averaged) + sgld",
                   "name = \"cv\"\nbatch_size = 20\ncentring = \"sgld\"\nsgd_iterations = 5\nsgd_step_size = 5e-3\n"
                   "centre_passes = 4\n",
                   std::size_t{0}}}) {
    INFO(label);
    test::TempDir dir;
    const auto file = dir.write("run.toml", model + "[estimator]\n" + estimator + sgld + run);
    check_one_process_draws(dir, file, label, compared);
  }
}

TEST_CASE("mlp, a softmax network each rank holding its rows: 1, 2 and 4 ranks give the one-process draws") {
  // A network's batch gradient is a sum over rows as a GLM's is, each rank summing its rows' terms
  // through the same passes: the bound above holds. MALA + MH also compares the reduced exact
  // potentials of both ends of every step.
  const std::string model = "[model]\nname = \"mlp\"\nlayers = [6]\nn = 600\nfeatures = 4\ntest_size = 0.1\n";
  const std::string run = "[run]\nwarmup = 0\niterations = 300\nthin = 1\nchains = 1\nseed = 7\neval_every = 100\nlp = true\n";
  for (const auto& [label, sampler] :
       {std::pair{"mlp, minibatch + sgld", "[estimator]\nname = \"minibatch\"\nbatch_size = 50\n[integrator]\nname = \"sgld\"\n"
                                          "step_size = 1e-3\n[corrector]\nname = \"none\"\n"},
        std::pair{"mlp, exact + mala + mh", "[estimator]\nname = \"exact\"\n[integrator]\nname = \"mala\"\nstep_size = 1e-3\n"
                                           "[corrector]\nname = \"mh\"\nevery = 1\n"}}) {
    INFO(label);
    test::TempDir dir;
    check_one_process_draws(dir, dir.write("run.toml", model + sampler + run), label);
  }
}

TEST_CASE("a data-parallel run whose latent Gibbs step draws from the chain's stream per item ends the job naming the rank") {
  // The fixture latent_draws_per_item declares latent-gibbs-step and draws one uniform per batch
  // item from the chain's stream: each rank evaluates its own items, so the ranks draw unlike
  // numbers and their streams part. The stream's next value travels with each gradient's gather;
  // the first gradient whose items the ranks split unevenly ends the job. One process and one rank
  // run it (one stream). Broken (the marks not compared), the 2-rank job ran to exit 0.
  test::TempDir dir;
  own_temporary_folder(dir);  // the aborted job's scratch folders go with it
  const auto plugin = test::fixture_plugin_dir / "sgmcmc-model-latent_draws_per_item.so";
  const auto file = dir.write("run.toml", fmt::format("[model]\nname = \"{}\"\n[estimator]\nname = \"minibatch\"\n"
                                                      "batch_size = 10\n[integrator]\nname = \"sgld\"\nstep_size = 1e-3\n"
                                                      "[corrector]\nname = \"none\"\n[run]\nwarmup = 0\niterations = 20\n"
                                                      "thin = 1\nchains = 1\nseed = 7\n",
                                                      plugin.string()));
  const auto alone = test::run_cli("run --quiet --config '" + file.string() + "' --out '" + (dir.path() / "alone").string() + "'");
  INFO(alone.output);
  CHECK_THAT(alone, test::ExitsWith(0));
  const auto one = data_parallel_run(1, file, dir.path() / "one");
  INFO(one.output);
  CHECK_THAT(one, test::ExitsWith(0));
  const auto two = data_parallel_run(2, file, dir.path() / "two");
  INFO(two.output);
  CHECK(two.exit_code == 2);
  CHECK_THAT(two.output, Contains("its gradient drew from the chain's random stream differently on rank 1 than on rank 0"));
  CHECK(!fs::exists(dir.path() / "two" / "manifest.json"));
}

namespace {

// Checkpoints and resume (stage 3). A data-parallel chain's state is replicated (θ, the stream,
// the integrator's, corrector's and estimator's state, cv's centre gradient being a reduced
// pass), so a resumed 2-rank job continues bit for bit what the uninterrupted 2-rank job wrote:
// chain-1.csv byte for byte (but its elapsed-time comments) and metrics.csv but its seconds.

/// Logistic regression on `rows` simulated rows, one chain of `iterations` with lp__ and a
/// checkpoint every 100 iterations.
std::string checkpointed_run(const std::string& sampler, std::uint64_t iterations, std::uint64_t thin = 1,
                             std::size_t rows = 2000) {
  return fmt::format("[model]\nname = \"logistic\"\nn = {}\n\n{}\n[run]\nwarmup = 0\niterations = {}\nthin = {}\n"
                     "chains = 1\nseed = 7\neval_every = 100\nlp = true\ncheckpoint_every = 100\n",
                     rows, sampler, iterations, thin);
}

// OBABO (Garriga-Alonso & Fortuin 2021) with minibatch kicks and an MH test every 10 steps on
// exact endpoints: the corrector's block state (the block's first θ, momentum and U) is part of
// the checkpoint, which is taken only where a block ends.
const std::string obabo_mh =
    "[estimator]\nname = \"minibatch\"\nbatch_size = 200\n[integrator]\nname = \"obabo\"\nstep_size = 2e-4\n"
    "friction = 100.0\n[corrector]\nname = \"mh\"\nevery = 10\nexact_endpoints = true\n";

/// What a resumed run must reproduce: the draws without their elapsed-time lines, the metrics
/// without their seconds.
std::vector<std::string> outputs(const fs::path& folder) {
  return {test::draws_without_elapsed_time(folder / "chain-1.csv"),
          test::without_seconds(test::read_text(folder / "metrics.csv"))};
}

/// `mpirun -n ranks sgmcmc run --resume folder`.
test::CliResult resume_run(int ranks, const fs::path& folder) {
  return test::mpi_cli(ranks, "run --quiet --resume '" + folder.string() + "'");
}

/// The argument vector of `[timeout] mpirun -n 2 sgmcmc run --config file --out out ...`, for a job
/// started in the background (test::spawn); timeout ends a job that hangs (exit 124), else
/// ctest's time limit does (tests/CMakeLists.txt).
std::vector<std::string> background_job(const fs::path& file, const fs::path& out, bool under_timeout) {
  std::vector<std::string> arguments;
  if (under_timeout) arguments = {"/usr/bin/timeout", "-k", "10", "300"};
  for (const auto& word : test::mpi_launcher(2)) arguments.push_back(word);
  for (const std::string& word : {std::string(SGMCMC_CLI), std::string("run"), std::string("--quiet"),
                                 std::string("--config"), file.string(), std::string("--out"), out.string(),
                                 std::string("--set"), std::string("run.data_parallel=true")})
    arguments.push_back(word);
  return arguments;
}

/// The ranks' scratch folders in the temporary folder (sgmcmc-run-PID-rank-R).
std::vector<fs::path> scratch_folders() {
  std::vector<fs::path> folders;
  for (const auto& entry : fs::directory_iterator(fs::temp_directory_path()))
    if (entry.path().filename().string().starts_with("sgmcmc-run-")) folders.push_back(entry.path());
  return folders;
}

}  // namespace

TEST_CASE("a data-parallel run stopped after a checkpoint and resumed on 2 ranks writes the uninterrupted run's files") {
  // saga: each rank keeps its block of the table; the checkpoint holds the blocks gathered, and each
  // resumed rank takes back its own.
  for (const auto& [label, sampler, thin] : {std::tuple{"minibatch + sgld", minibatch_sgld, 1},
                                             std::tuple{"cv + sgld", cv_sgld, 1},
                                             std::tuple{"saga + sgld", saga_sgld, 1},
                                             std::tuple{"minibatch + obabo + mh", obabo_mh, 10}}) {
    INFO(label);
    test::TempDir dir;
    const auto file = dir.write("run.toml", checkpointed_run(sampler, 300, static_cast<std::uint64_t>(thin)));
    const auto whole = data_parallel_run(2, file, dir.path() / "whole");
    INFO(whole.output);
    REQUIRE_THAT(whole, test::ExitsWith(0));
    const auto out = dir.path() / "stopped";
    const auto stopped = data_parallel_run(2, file, out, "--stop-after 200");
    INFO(stopped.output);
    REQUIRE_THAT(stopped, test::ExitsWith(0));
    CHECK_THAT(stopped.output, Contains("continue with: mpirun -n 2 sgmcmc run --resume"));
    REQUIRE(fs::exists(out / "checkpoint-1.bin"));
    CHECK(!fs::exists(out / "manifest.json"));
    CHECK(nlohmann::json::parse(test::read_text(out / "checkpoint.json"))["data_parallel"]["ranks"] == 2);

    // Another rank count is refused before anything is touched, naming the file and the key.
    for (const int ranks : {1, 3}) {
      const auto other = resume_run(ranks, out);
      INFO(other.output);
      CHECK(other.exit_code == 2);
      CHECK_THAT(other.output, Contains("checkpoint.json: data_parallel.ranks = 2: the run was checkpointed by a job of 2 "
                                        "ranks, and this job has " + std::to_string(ranks)));
    }
    const auto resumed = resume_run(2, out);
    INFO(resumed.output);
    REQUIRE_THAT(resumed, test::ExitsWith(0));
    CHECK(outputs(out) == outputs(dir.path() / "whole"));
    const auto manifest = nlohmann::json::parse(test::read_text(out / "manifest.json"));
    CHECK(manifest["status"] == "complete");
    CHECK(manifest["chains"][0]["resumed_at_iteration"] == 200);
    CHECK(manifest["data_parallel"]["iterations"] == 100);  // this run's part
    CHECK(!fs::exists(out / "checkpoint-1.bin"));
    if (label == std::string("minibatch + obabo + mh")) {  // both branches of the MH test were taken
      const auto draws = draws_of(out);
      const auto accepted = std::count_if(draws.rows.begin(), draws.rows.end(), [](const auto& row) { return row[4] == 1.0; });
      CHECK(accepted > 0);
      CHECK(accepted < static_cast<std::ptrdiff_t>(draws.rows.size()));
    }
  }
}

namespace {

/// The process id of rank 1 of the job started after `before` was listed, from its scratch
/// folder's name (sgmcmc-run-PID-rank-1), or 0 while it has none.
pid_t rank_1_pid(const std::vector<fs::path>& before) {
  for (const auto& folder : scratch_folders())
    if (std::find(before.begin(), before.end(), folder) == before.end() && folder.filename().string().ends_with("-rank-1"))
      return static_cast<pid_t>(std::stol(folder.filename().string().substr(std::string("sgmcmc-run-").size())));
  return 0;
}

/// Waits (at most two minutes) until `ready()` holds or `job` ended; true when ready first.
template <class Ready>
bool wait_until(pid_t job, Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (!ready()) {
    if (std::chrono::steady_clock::now() > deadline || waitpid(job, nullptr, WNOHANG) == job) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace

TEST_CASE("SIGTERM to a data-parallel job or to one rank: every rank stops at the same block end, and 2 ranks resume it bit for bit") {
  test::TempDir dir;
  own_temporary_folder(dir);
  // 50,000 rows: the job runs for seconds (5.5 s on an idle machine, measured), well beyond the
  // second mpirun waits before it passes a SIGTERM on; with 2,000 rows it could end first (0.7 s).
  const auto file = dir.write("run.toml", checkpointed_run(obabo_mh, 20000, 10, 50000));
  const auto whole = data_parallel_run(2, file, dir.path() / "whole");
  INFO(whole.output);
  REQUIRE_THAT(whole, test::ExitsWith(0));

  // To the job: to mpirun itself (GNU timeout would send it twice, to mpirun and to its process
  // group, and mpirun signalled twice sometimes ended at once, losing the ranks' output: seen once
  // in a suite run). Open MPI's mpirun (4.1.4, measured) then ends the job: SIGTERM to every rank odls_base_sigkill_timeout seconds later (1 by default), SIGKILL
  // as long after that; the ranks stop at a block's end well within that second. The ranks get it
  // nearly at once, so they would mostly stop together even without agreeing; a signal to rank 1
  // alone (as a batch system or a user may send) shows that they agree: rank 1 stopping on its
  // own would leave rank 0 waiting in the gather until mpirun ends the job, without its manifest.
  for (const bool to_rank_1 : {false, true}) {
    INFO((to_rank_1 ? "SIGTERM to rank 1 alone" : "SIGTERM to mpirun"));
    const auto before = scratch_folders();
    const auto out = dir.path() / (to_rank_1 ? "rank-1" : "job"), log = dir.path() / (to_rank_1 ? "rank-1.log" : "job.log");
    const pid_t job = test::spawn(background_job(file, out, false), log.string());
    REQUIRE(job > 0);
    pid_t rank_1 = 0;
    REQUIRE(wait_until(job, [&] {
      std::error_code absent;
      if (to_rank_1 && rank_1 == 0) rank_1 = rank_1_pid(before);
      return (!to_rank_1 || rank_1 != 0) && fs::file_size(out / "chain-1.csv", absent) > 4096 && !absent;
    }));
    REQUIRE(kill(to_rank_1 ? rank_1 : job, SIGTERM) == 0);
    int status = 0;
    REQUIRE(waitpid(job, &status, 0) == job);
    const auto said = test::read_text(log);
    INFO(said);
    CHECK(WIFEXITED(status));
    // The ranks stopped, each with 130, which mpirun passes on; when it was signalled itself it
    // reports the job's end as 1.
    CHECK(WEXITSTATUS(status) == (to_rank_1 ? 130 : 1));
    CHECK_THAT(said, Contains(to_rank_1 ? "sgmcmc: interrupted (a signal to another rank): chain 1 at iteration"
                                        : "sgmcmc: interrupted (SIGTERM): chain 1 at iteration"));
    CHECK_THAT(said, Contains("continue with: mpirun -n 2 sgmcmc run --resume " + out.string()));
    const auto manifest = nlohmann::json::parse(test::read_text(out / "manifest.json"));
    CHECK(manifest["status"] == "interrupted");
    const std::uint64_t stopped_at = manifest["chains"][0]["iterations"];
    CHECK(stopped_at % 10 == 0);  // a block's end
    CHECK(stopped_at < 20000);
    REQUIRE(fs::exists(out / "checkpoint-1.bin"));

    const auto resumed = resume_run(2, out);
    INFO(resumed.output);
    REQUIRE_THAT(resumed, test::ExitsWith(0));
    CHECK(outputs(out) == outputs(dir.path() / "whole"));
    CHECK(nlohmann::json::parse(test::read_text(out / "manifest.json"))["chains"][0]["resumed_at_iteration"] == stopped_at);
  }
}

TEST_CASE("one rank of a data-parallel job killed with SIGKILL ends the job, and 2 ranks resume it from its last checkpoint") {
  // Open MPI's mpirun ends the job when a rank dies (it kills the others): the survivor does not
  // wait in the collective for it (timeout would end the job with 124).
  test::TempDir dir;
  own_temporary_folder(dir);  // the killed rank's scratch folder stays behind in it
  const auto file = dir.write("run.toml", checkpointed_run(minibatch_sgld, 3000));
  const auto whole = data_parallel_run(2, file, dir.path() / "whole");
  INFO(whole.output);
  REQUIRE_THAT(whole, test::ExitsWith(0));

  const auto before = scratch_folders();
  const auto out = dir.path() / "killed", log = dir.path() / "killed.log";
  const pid_t job = test::spawn(background_job(file, out, true), log.string());
  REQUIRE(job > 0);
  // Killed once the first checkpoint is written and the chain has gone on beyond it.
  pid_t rank_1 = 0;
  REQUIRE(wait_until(job, [&] {
    std::error_code absent;
    if (rank_1 == 0) rank_1 = rank_1_pid(before);
    return rank_1 != 0 && fs::exists(out / "checkpoint-1.bin") && fs::file_size(out / "chain-1.csv", absent) > 200000 &&
           !absent;
  }));
  REQUIRE(rank_1 != 0);
  REQUIRE(kill(rank_1, SIGKILL) == 0);
  int status = 0;
  REQUIRE(waitpid(job, &status, 0) == job);
  const auto said = test::read_text(log);
  INFO(said);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) != 0);
  CHECK(WEXITSTATUS(status) != 124);  // ended by mpirun, not by timeout
  CHECK_THAT(said, Contains("exited on signal 9"));
  CHECK(!fs::exists(out / "manifest.json"));

  const auto resumed = resume_run(2, out);
  INFO(resumed.output);
  REQUIRE_THAT(resumed, test::ExitsWith(0));
  CHECK(outputs(out) == outputs(dir.path() / "whole"));
  CHECK(nlohmann::json::parse(test::read_text(out / "manifest.json"))["chains"][0]["resumed_at_iteration"].get<int>() > 0);
}

TEST_CASE("exact + mala + mh on 2 ranks samples the closed-form posterior of Bayesian linear regression") {
  // Quantity: each coefficient's posterior mean and variance, from 10,000 draws of a chain
  // whose data terms (every potential and gradient: the exact estimator, MH's endpoints) are split
  // across 2 ranks. Reference: the closed form N(μ, A⁻¹) of the gaussian model (Bishop 2006,
  // eq. 3.53-3.54; tests/gaussian_posterior.cpp, computed independently of the plugin and of the
  // chain). MALA with an MH test every step (Roberts & Tweedie 1996) leaves it invariant, so the
  // sample moments differ from it by Monte Carlo error alone.
  // Tolerance: by the Markov chain CLT, (x̄ - μ_j)/se_j is about N(0, 1), se_j estimated by 100
  // batch means (Flegal & Jones 2010; batches of 100 draws, beyond this chain's integrated
  // autocorrelation time of about 9 steps, measured, so the batch means are nearly independent
  // and se_j's own relative error is about 1/sqrt(2·99) = 7%). |Z| > 5 has probability 5.7e-7,
  // so the 6 checks (3 means, 3 variances, the variance's se by batch means of (x - x̄)²) fail by
  // chance with probability below 2e-5 even with se underestimated by 7% (6 × P(|Z| > 4.67)). A
  // chain that sampled another law fails: with rank 1's part left out of the sum (the posterior
  // of rank 0's rows alone) the variances came out twice A⁻¹'s, 11 se away, and one mean 23 se.
  test::GaussianFixture fixture(1000, 3);
  const auto data = fixture.dir.path() / "data.csv";
  const auto file = fixture.dir.write(
      "run.toml", fmt::format("[model]\nname = \"gaussian\"\ndata = \"{}\"\ntest_size = 0\nnoise_sd = {}\nprior_sd = {}\n"
                              "[estimator]\nname = \"exact\"\n[integrator]\nname = \"mala\"\nstep_size = 1e-4\n"
                              "[corrector]\nname = \"mh\"\nevery = 1\n[run]\nwarmup = 500\niterations = 10000\nthin = 1\n"
                              "chains = 1\nseed = 3\neval_every = 1000\n",
                              data.string(), test::GaussianFixture::noise_sd, test::GaussianFixture::prior_sd));
  const auto out = fixture.dir.path() / "two";
  const auto result = data_parallel_run(2, file, out);
  INFO(result.output);
  REQUIRE_THAT(result, test::ExitsWith(0));
  const auto draws = draws_of(out);
  REQUIRE(draws.rows.size() == 10000);
  const std::size_t dim = 3, first = draws.columns.size() - dim;  // the coefficients come last
  for (std::size_t j = 0; j < dim; ++j) {
    std::vector<double> values;
    for (const auto& row : draws.rows) values.push_back(row[first + j]);
    const double mean = test::mean(values), se = test::batch_means_se(values);
    const double variance = test::variance(values), variance_se = test::variance_se(values);
    const double exact_variance = xt::linalg::inv(fixture.precision)(j, j);
    INFO(draws.columns[first + j] << ": mean " << mean << " (exact " << fixture.mean(j) << ", se " << se << "), variance "
                                  << variance << " (exact " << exact_variance << ", se " << variance_se << ")");
    CHECK(std::abs(mean - fixture.mean(j)) <= 5 * se);
    CHECK(std::abs(variance - exact_variance) <= 5 * variance_se);
  }
}

#else

TEST_CASE("mpirun sgmcmc run with run.data_parallel (skipped: built without MPI)") {
  WARN("skipped: sgmcmc was built without MPI (SGMCMC_WITH_MPI=OFF or no MPI found); third_party/setup.sh installs OpenMPI");
}

#endif

TEST_CASE("run.data_parallel without an MPI launcher is refused with the reason") {
  test::TempDir dir;
  const auto file = dir.write("run.toml", logistic_run(minibatch_sgld));
  const auto result = test::run_cli("run --quiet --config '" + file.string() + "' --out '" +
                                    (dir.path() / "out").string() + "' --set run.data_parallel=true");
  INFO(result.output);
  CHECK(result.exit_code == 2);
  CHECK_THAT(result.output, Contains("run.data_parallel: a data-parallel run splits one chain's data across the ranks "
                                     "of an MPI job, and no MPI launcher started this process"));
  CHECK(!fs::exists(dir.path() / "out" / "manifest.json"));
}
