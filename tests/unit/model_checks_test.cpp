// `sgmcmc check-model`'s checks of quantities of interest, on a small in-test model whose quantity
// names and values each test case chooses: every way a quantity can be wrong must be caught and
// named, and a sound one must pass.
#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

import sgmcmc;

namespace {

using Quantity = std::function<double(double x)>;

/// y_i ~ N(x, 1) for 10 items, flat prior; quantities as given.
class QuantityModel final : public sgmcmc::Model {
public:
  QuantityModel(std::vector<std::string> names, Quantity value) : names_(std::move(names)), value_(std::move(value)) {}
  std::size_t dimension() const override { return 1; }
  std::size_t num_items() const override { return 10; }
  std::vector<std::string> parameter_names() const override { return {"x"}; }
  sgmcmc::Capabilities capabilities() const override { return {.exact_log_likelihood = true}; }
  double prior_potential(std::span<const double>) const override { return 0.0; }
  void add_prior_gradient(std::span<const double>, std::span<double>) const override {}
  void add_data_gradient(std::span<const double> x, const sgmcmc::Batch& batch, std::span<double> gradient,
                         sgmcmc::Workspace&, sgmcmc::Rng&) const override {
    for (std::size_t k = 0; k < batch.items.size(); ++k) gradient[0] += batch.weight(k) * (x[0] - item(batch.items[k]));
  }
  double data_potential(std::span<const double> x, const sgmcmc::Batch& batch, sgmcmc::Workspace&) const override {
    double sum = 0.0;
    for (std::size_t k = 0; k < batch.items.size(); ++k)
      sum += batch.weight(k) * 0.5 * (x[0] - item(batch.items[k])) * (x[0] - item(batch.items[k]));
    return sum;
  }
  std::vector<std::string> quantity_names() const override { return names_; }
  void evaluate_quantities(std::span<const double> x, sgmcmc::Workspace&, std::span<double> out) const override {
    for (double& q : out) q = value_(x[0]);
  }

private:
  static double item(std::size_t i) { return 0.1 * static_cast<double>(i); }
  std::vector<std::string> names_;
  Quantity value_;
};

/// The outcome of the check named `name` for a model with these quantities.
sgmcmc::CheckOutcome outcome_of(const std::string& name, std::vector<std::string> names, Quantity value) {
  const auto model = std::make_shared<QuantityModel>(std::move(names), std::move(value));
  const auto outcomes = sgmcmc::check_model([&](sgmcmc::SectionReader, std::uint64_t) { return model; },
                                            sgmcmc::Settings("model"));
  const auto found = std::find_if(outcomes.begin(), outcomes.end(), [&](const auto& o) { return o.name == name; });
  REQUIRE(found != outcomes.end());
  return *found;
}

const std::string names_check = "quantity names are new, distinct CSV columns";
const std::string values_check = "quantities are finite functions of θ";
using Status = sgmcmc::CheckOutcome::Status;

}  // namespace

TEST_CASE("check-model: quantities with sound names and finite values of θ pass") {
  const Quantity square = [](double x) { return x * x; };
  CHECK(outcome_of(names_check, {"x_squared", "x_squared_again"}, square).status == Status::passed);
  CHECK(outcome_of(values_check, {"x_squared"}, square).status == Status::passed);
}

TEST_CASE("check-model: a quantity's name that cannot be a new CSV column is named") {
  const Quantity one = [](double) { return 1.0; };
  const struct {
    std::vector<std::string> names;
    std::string why;
  } cases[] = {{{"x"}, "'x' is already a parameter's"},
               {{"q", "q"}, "'q' is already a parameter's or another quantity's"},
               {{"energy__"}, "ends in __"},
               {{"held out"}, "holds a comma, quote, space"},
               {{""}, "empty name"}};
  for (const auto& [names, why] : cases) {
    const auto outcome = outcome_of(names_check, names, one);
    INFO(outcome.detail);
    CHECK(outcome.status == Status::failed);
    CHECK_THAT(outcome.detail, Catch::Matchers::Contains(why));
  }
}

TEST_CASE("check-model: a quantity that is not finite, or not a function of θ alone, is named") {
  const auto not_finite = outcome_of(values_check, {"log_x"}, [](double) { return std::log(-1.0); });
  CHECK(not_finite.status == Status::failed);
  CHECK_THAT(not_finite.detail, Catch::Matchers::Contains("log_x = ") && Catch::Matchers::Contains("nan at probe point"));
  auto calls = std::make_shared<int>(0);
  const auto drifting = outcome_of(values_check, {"counter"}, [calls](double x) { return x + ++*calls; });
  CHECK(drifting.status == Status::failed);
  CHECK_THAT(drifting.detail, Catch::Matchers::Contains("not a function of θ alone"));
}
