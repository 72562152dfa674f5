// Small in-test models and chain helpers for sampler tests.
#pragma once
#include <memory>
#include <span>
#include <string>
#include <vector>
#include <fmt/format.h>

import sgmcmc;

namespace test {

/// A one-dimensional target N(μ, σ²) as a Model with one item: f_0 = 0, f_1 = (x-μ)²/(2σ²).
class NormalTarget final : public sgmcmc::Model {
public:
  NormalTarget(double mu, double sigma) : mu_(mu), sigma_(sigma) {}
  std::size_t dimension() const override { return 1; }
  std::size_t num_items() const override { return 1; }
  std::vector<std::string> parameter_names() const override { return {"x"}; }
  sgmcmc::Capabilities capabilities() const override { return {.exact_log_likelihood = true}; }
  double prior_potential(std::span<const double>) const override { return 0.0; }
  void add_prior_gradient(std::span<const double>, std::span<double>) const override {}
  void add_data_gradient(std::span<const double> x, const sgmcmc::Batch& batch, std::span<double> gradient,
                         sgmcmc::Workspace&, sgmcmc::Rng&) const override {
    for (std::size_t k = 0; k < batch.items.size(); ++k) gradient[0] += batch.weight(k) * (x[0] - mu_) / (sigma_ * sigma_);
  }
  double data_potential(std::span<const double> x, const sgmcmc::Batch& batch, sgmcmc::Workspace&) const override {
    double sum = 0.0;
    for (std::size_t k = 0; k < batch.items.size(); ++k) sum += batch.weight(k) * 0.5 * (x[0] - mu_) * (x[0] - mu_) / (sigma_ * sigma_);
    return sum;
  }

private:
  double mu_, sigma_;
};

/// Keeps every draw (and its corrector decision) in memory.
struct Draws final : sgmcmc::ChainObserver {
  std::vector<std::vector<double>> rows;
  std::vector<sgmcmc::Decision> decisions;
  std::vector<double> step_sizes;  // the integrator's step at each draw (Stan CSV's stepsize__)
  void on_draw(const sgmcmc::Draw& draw) override {
    rows.emplace_back(draw.theta.begin(), draw.theta.end());
    decisions.push_back(draw.decision);
    step_sizes.push_back(draw.step_size);
  }
  void on_metrics(const sgmcmc::MetricsRow&) override {}
  std::vector<double> coordinate(std::size_t j, std::size_t burn_in = 0) const {
    std::vector<double> values;
    for (std::size_t k = burn_in; k < rows.size(); ++k) values.push_back(rows[k][j]);
    return values;
  }
};

struct ChainRun {
  Draws draws;
  sgmcmc::ChainResult result;
};

/// Runs one chain of `model` with the sections of `toml` ([estimator], [integrator], [corrector])
/// for `iterations` iterations after `warmup`, recording every `thin`-th, from the chain stream of `seed`.
inline ChainRun run_chain(std::shared_ptr<const sgmcmc::Model> model, const std::string& toml, std::uint64_t iterations,
                          std::uint64_t thin = 1, std::uint64_t seed = 2024, std::uint64_t warmup = 0) {
  auto config = sgmcmc::parse_config(toml, "test.toml");
  sgmcmc::ConfigReads reads;
  auto chain = sgmcmc::make_chain(sgmcmc::plan_chain({config, reads}, *model), model, sgmcmc::Rng(seed, sgmcmc::chain_stream(0)));
  for (const auto& [name, section] : config.sections) sgmcmc::reject_unknown_keys(section, reads[name]);
  ChainRun run;
  run.result = chain->run({.warmup = warmup, .iterations = iterations, .thin = thin, .eval_every = iterations}, run.draws);
  return run;
}

}  // namespace test
