// `sgmcmc gradient-variance` through the real CLI and the gaussian plugin, against the exact
// variance of a minibatch estimate drawn without replacement.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xtensor-blas/xlinalg.hpp>

#include "gaussian_fixture.hpp"
#include "support.hpp"

using Catch::Matchers::Contains;

namespace {

/// Per coordinate j, the variance of (N/n) Σ_{i∈B} a_ij for a uniformly drawn n-subset B of the
/// N rows a_i (sampling without replacement, Cochran 1977, Theorem 2.2): (N²/n)(1 - n/N) s²_j,
/// with s²_j the rows' variance (divisor N - 1) in coordinate j.
std::vector<double> exact_variances(const xt::xtensor<double, 2>& rows, double n) {
  const double big_n = static_cast<double>(rows.shape(0));
  std::vector<double> variances;
  for (std::size_t j = 0; j < rows.shape(1); ++j) {
    const auto column = xt::view(rows, xt::all(), j);
    const double mean = xt::mean(column)();
    variances.push_back(big_n * big_n / n * (1.0 - n / big_n) * xt::sum((column - mean) * (column - mean))() / (big_n - 1.0));
  }
  return variances;
}

double sum(const std::vector<double>& values) { return std::accumulate(values.begin(), values.end(), 0.0); }

/// The middle one of three coordinates' ratios a_j / b_j.
double median_of_three_ratios(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> ratios = {a[0] / b[0], a[1] / b[1], a[2] / b[2]};
  std::sort(ratios.begin(), ratios.end());
  return ratios[1];
}

/// ∇f_i(θ) = x_i (x_iᵀθ - y_i)/σ² of every row: the gaussian plugin's data gradients.
xt::xtensor<double, 2> data_gradients(const test::GaussianFixture& fixture, const xt::xtensor<double, 1>& theta) {
  const xt::xtensor<double, 1> residual = (xt::linalg::dot(fixture.x, theta) - fixture.y) / (fixture.noise_sd * fixture.noise_sd);
  return fixture.x * xt::view(residual, xt::all(), xt::newaxis());
}

}  // namespace

TEST_CASE("gradient-variance measures tr Cov of minibatch and cv estimates as the sampling-without-replacement formula gives") {
  // The reference is Cochran's formula on the fixture's rows, at three points: the centre θ̂ = μ
  // (cv's differences vanish, so its variance is exactly 0), and μ + δ, μ + 4δ. cv's estimate is
  // ∇U(θ̂) + (N/n) Σ_B [∇f_i(θ) - ∇f_i(θ̂)], so its variance is the formula on the differences.
  // Tolerance: each estimate is a sum of n = 50 rows, near Gaussian (the rows' excess kurtosis,
  // at most about 15 for these products of normals, enters divided by n), so a coordinate's
  // sample variance over R = 4,000 estimates has relative sd sqrt(2/(R - 1)) (1 + κ/2n)^½ ≤ 0.025,
  // and a sum of such positive terms no more: 12% is about 5 sd.
  test::GaussianFixture fixture(1000, 3);
  constexpr double n = 50.0;
  const xt::xtensor<double, 1> delta = {0.02, -0.03, 0.01};
  const std::vector<xt::xtensor<double, 1>> points = {fixture.mean, fixture.mean + delta, fixture.mean + 4.0 * delta};
  test::TempDir dir;
  std::string csv = "beta.1,beta.2,beta.3\n";
  for (const auto& p : points) csv += fmt::format("{:.17g},{:.17g},{:.17g}\n", p(0), p(1), p(2));
  const auto at = dir.write("points.csv", csv);
  const auto config = dir.write(
      "cv.toml", fmt::format("[model]\nname = \"gaussian\"\ndata = \"{}\"\ntest_size = 0\nnoise_sd = {}\nprior_sd = {}\n"
                             "[estimator]\nname = \"cv\"\nbatch_size = {}\ncentre = \"{:.17g}, {:.17g}, {:.17g}\"\n",
                             (fixture.dir.path() / "data.csv").string(), fixture.noise_sd, fixture.prior_sd, n, fixture.mean(0),
                             fixture.mean(1), fixture.mean(2)));
  const auto out = dir.path() / "variance.csv";
  const auto result = test::run_cli(fmt::format("gradient-variance --config '{}' --at '{}' --points 3 --repeats 4000 --csv '{}'",
                                                config.string(), at.string(), out.string()));
  INFO(result.output);
  REQUIRE(result.exit_code == 0);
  const auto lines = test::lines_of(test::read_text(out));
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == "draw,distance_to_centre,minibatch_trace,estimator_trace,ratio,median_coordinate_ratio");
  const auto centre_gradients = data_gradients(fixture, fixture.mean);
  for (std::size_t p = 0; p < points.size(); ++p) {
    const auto fields = test::csv_fields(lines[p + 1]);
    const auto gradients = data_gradients(fixture, points[p]);
    const auto minibatch_variances = exact_variances(gradients, n), cv_variances = exact_variances(gradients - centre_gradients, n);
    const double minibatch = sum(minibatch_variances), cv = sum(cv_variances);
    INFO(fmt::format("point {}: minibatch {} (exact {}), cv {} (exact {})", p + 1, fields[2], minibatch, fields[3], cv));
    CHECK(std::stod(fields[1]) == Approx(xt::linalg::norm(points[p] - fixture.mean)).margin(1e-12));
    CHECK(std::stod(fields[2]) == Approx(minibatch).epsilon(0.12));
    if (p == 0) {
      CHECK(std::stod(fields[3]) == 0.0);
      CHECK(fields[5] == "inf");
    } else {
      CHECK(std::stod(fields[3]) == Approx(cv).epsilon(0.12));
      // A ratio of two such variances: relative sd at most 0.025·√2, so 18% is about 5 sd.
      CHECK(std::stod(fields[5]) == Approx(median_of_three_ratios(minibatch_variances, cv_variances)).epsilon(0.18));
    }
  }
}

TEST_CASE("gradient-variance refuses what it cannot measure, naming the option or the file") {
  test::TempDir dir;
  const auto partial = dir.write("partial.csv", "beta.1\n1\n");
  const struct {
    std::string arguments, expected;
  } cases[] = {
      {"--preset demo --at '" + partial.string() + "'", "no column for the parameter 'beta.2'"},
      {"--preset demo --at '" + (dir.path() / "absent").string() + "'", "does not exist"},
      {"--preset demo --at '" + partial.string() + "' --repeats 1", "--repeats must be at least 2"},
      {"--at '" + partial.string() + "'", "give --preset NAME or --config FILE"},
      {"--preset demo --set estimator.batchsize=5 --at '" + partial.string() + "'", "unknown key 'estimator.batchsize'"},
  };
  for (const auto& bad : cases) {
    const auto result = test::run_cli("gradient-variance " + bad.arguments);
    INFO(bad.arguments << "\n" << result.output);
    CHECK(result.exit_code == 2);
    CHECK_THAT(result.output, Contains(bad.expected));
  }
}
