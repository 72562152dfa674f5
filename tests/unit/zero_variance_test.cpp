// sgmcmc.zero_variance: the controls computed by hand, and bad input refused with the reason.
// sgmcmc.recording: the [output] options and their errors, the recorder's score sign.
#include <catch2/catch.hpp>
#include <cmath>
#include <memory>
#include <string>
#include <vector>
#include <fmt/format.h>

#include "targets.hpp"

using Catch::Matchers::Contains;

namespace {

/// T draws of a 2-d θ with scores from an arbitrary smooth rule (no target needed to test shapes).
void draws(std::size_t count, sgmcmc::DrawMatrix& points, sgmcmc::DrawMatrix& scores) {
  sgmcmc::Rng rng(3, 1);
  for (std::size_t t = 0; t < count; ++t) {
    points.push_back({rng.normal(), rng.normal()});
    scores.push_back({-points.back()[0] + 0.1 * rng.normal(), -points.back()[1] + 0.1 * rng.normal()});
  }
}

}  // namespace

TEST_CASE("ZV controls: z for order 1, then 1 + θ_j z_j and θ_j z_k + θ_k z_j for order 2") {
  const std::vector<double> theta{2.0, -1.0, 0.5}, z{0.25, 3.0, -2.0};
  CHECK(sgmcmc::zv_control_count(3, 1) == 3);
  CHECK(sgmcmc::zv_control_count(3, 2) == 9);  // d(d+3)/2
  std::vector<double> out(9);
  sgmcmc::zv_controls(theta, z, 2, out);
  const std::vector<double> expected{0.25, 3.0, -2.0,                        // z
                                     1 + 2.0 * 0.25, 1 - 3.0, 1 + 0.5 * -2.0,  // 1 + θ_j z_j
                                     2.0 * 3.0 + -1.0 * 0.25,                  // (1,2)
                                     2.0 * -2.0 + 0.5 * 0.25,                  // (1,3)
                                     -1.0 * -2.0 + 0.5 * 3.0};                 // (2,3)
  CHECK(out == expected);
  const auto names = sgmcmc::zv_control_names(3, 2);
  REQUIRE(names.size() == 9);
  CHECK(names[3] == "1 + θ[1]z[1]");
  CHECK(names[6] == "θ[1]z[2] + θ[2]z[1]");
}

TEST_CASE("ZV refuses too few draws, mismatched and non-finite input") {
  sgmcmc::DrawMatrix points, scores;
  draws(5, points, scores);
  const sgmcmc::DrawMatrix q(5, std::vector<double>{1.0});
  // order 2 in d = 2 has 5 controls: 5 draws are not enough.
  CHECK_THROWS_WITH(sgmcmc::zero_variance(points, scores, q, 2),
                    Contains("5 draws") && Contains("5 control variates") && Contains("at least 6"));
  CHECK_NOTHROW(sgmcmc::zero_variance(points, scores, q, 1));
  CHECK_THROWS_WITH(sgmcmc::zero_variance(points, scores, q, 3), Contains("order 3"));

  auto short_scores = scores;
  short_scores.pop_back();
  CHECK_THROWS_WITH(sgmcmc::zero_variance(points, short_scores, q, 1), Contains("5 draws but 4 gradients"));

  auto bad = scores;
  bad[2][1] = std::nan("");
  CHECK_THROWS_WITH(sgmcmc::zero_variance(points, bad, q, 1), Contains("draw 3") && Contains("non-finite"));

  CHECK(sgmcmc::zero_variance(points, scores, q, 1).dropped.empty());
}

TEST_CASE("ZV drops constant and linearly dependent controls and fits the same projection without them") {
  // With z_2 = 2 z_1 (collinear features make gradient coordinates collinear) the span of the
  // controls is that of z_1 alone, so the least-squares fit q̃ must equal the one-control fit; a
  // constant control spans nothing once centred. Agreement is to rounding (1e-12 relative).
  sgmcmc::DrawMatrix points, scores, q;
  draws(200, points, scores);
  for (const auto& theta : points) q.push_back({theta[0] + 0.3 * theta[1] * theta[1]});
  sgmcmc::DrawMatrix first_points, first_scores;
  for (std::size_t t = 0; t < points.size(); ++t) {
    first_points.push_back({points[t][0]});
    first_scores.push_back({scores[t][0]});
  }
  const auto alone = sgmcmc::zero_variance(first_points, first_scores, q, 1).estimates[0];
  for (double second : {2.0, 0.0}) {
    auto modified = scores;
    for (auto& row : modified) row[1] = second * row[0] + (second == 0.0 ? 4.0 : 0.0);  // 2 z_1, or the constant 4
    const auto result = sgmcmc::zero_variance(points, modified, q, 1);
    INFO("z_2 = " << (second == 0.0 ? "4" : "2 z_1"));
    CHECK(result.dropped == std::vector<std::string>{"z[2]"});
    CHECK(result.estimates[0].coefficients[1] == 0.0);
    CHECK(result.estimates[0].zv_mean == Approx(alone.zv_mean).epsilon(1e-12));
    CHECK(result.estimates[0].zv_variance == Approx(alone.zv_variance).epsilon(1e-12));
  }
}

TEST_CASE("[output]: gradient sources, zv needs gradients, errors name the key") {
  const test::NormalTarget model(0.0, 1.0);
  const auto options = [&](const std::string& toml) {
    auto config = sgmcmc::parse_config(toml, "out.toml");
    return sgmcmc::read_output_options(sgmcmc::SectionReader(config["output"]), model);
  };
  const auto none = options("");
  CHECK(none.gradients == sgmcmc::GradientSource::none);
  CHECK_FALSE(none.quantities);
  const auto zv = options("[output]\nzv = true\n");  // zv alone records cv gradients, Baker et al. (2019)'s choice
  CHECK(zv.gradients == sgmcmc::GradientSource::cv);
  CHECK(zv.quantities);
  CHECK(options("[output]\ngradients = \"exact\"\nquantities = false\n").gradients == sgmcmc::GradientSource::exact);
  CHECK_THROWS_WITH(options("[output]\ngradients = \"exakt\"\n"),
                    Contains("out.toml:2") && Contains("output.gradients") && Contains("unknown gradient source 'exakt'"));
  CHECK_THROWS_WITH(options("[output]\nzv = true\ngradients = \"none\"\n"),
                    Contains("out.toml:2: output.zv = true needs recorded gradients"));
}

TEST_CASE("the recorder's score is ∇log π = -∇U and it leaves the chain's stream alone") {
  // N(1, 2²): ∇log π(x) = -(x - 1)/4; the exact source returns exactly that.
  auto model = std::make_shared<test::NormalTarget>(1.0, 2.0);
  auto config = sgmcmc::parse_config("[output]\ngradients = \"exact\"\n", "out.toml");
  const auto options = sgmcmc::read_output_options(sgmcmc::SectionReader(config["output"]), *model);
  sgmcmc::DrawRecorder recorder(model, options, sgmcmc::gradient_recipe(options.gradients, sgmcmc::SectionReader(config["estimator"]), *model),
                                sgmcmc::Rng(5, sgmcmc::recording_stream(0)));
  recorder.prepare();
  std::vector<double> score(1);
  const std::vector<double> theta{3.0};
  recorder.score(theta, 1, score);
  CHECK(score[0] == -0.5);
  CHECK(recorder.cost().item_gradients == 1);
  // Streams: data 0, chain k 2k+1, recorder k 2k+2 — all different.
  for (std::uint64_t k = 0; k < 8; ++k) {
    CHECK(sgmcmc::recording_stream(k) != sgmcmc::data_stream);
    for (std::uint64_t other = 0; other < 8; ++other) CHECK(sgmcmc::recording_stream(k) != sgmcmc::chain_stream(other));
  }
}
