// posteriordb's low_dim_gauss_mix-low_dim_gauss_mix: a two-component normal mixture written with
// the autodiff SDK, the Stan model line by line:
//   mu ordered (mu_1 < mu_2), mu_k ~ N(0, 2²),  sigma_k ~ half-N(0, 2²),  theta ~ Beta(5, 5),
//   y_n ~ theta N(mu_1, sigma_1²) + (1 - theta) N(mu_2, sigma_2²)  (the data: N, y in data.json).
// θ = (mu_ordered.1, mu_ordered.2, log_sigma.1, log_sigma.2, logit_theta), Stan's unconstrained
// form: mu_1 = u_1, mu_2 = u_1 + exp(u_2); σ_k = exp; theta = logistic; Jacobians in log_prior.
// One item per observation. Quantities: mu.1, mu.2 (the ordered vector, posteriordb's names).
#include <cmath>
#include <numbers>
#include <sgmcmc/autodiff.hpp>
#include <sgmcmc/json_data.hpp>
#include <sgmcmc/plugin.hpp>

// parameters(θ): the constrained values and log|Jacobian|, computed once per batch; log_prior
// and log_likelihood take them (sgmcmc/autodiff.hpp).

template <class T>
struct Mixture {
  std::vector<T> mu, sigma;
  T theta, log_jacobian;
};

class GaussMix final : public sgmcmc::autodiff::Model<GaussMix> {
public:
  explicit GaussMix(const sgmcmc::ModelContext& context) {
    const sgmcmc::JsonData data(context.settings.text("data", "data.json"));
    y_ = data.numbers("y", data.count("N"));
  }

  template <class T> Mixture<T> parameters(std::span<const T> theta) const {
    sgmcmc::autodiff::Parameters<T> in(theta);
    // Read in order (a braced list is evaluated left to right), the Jacobian last.
    return {.mu = in.ordered(2), .sigma = in.positives(2), .theta = in.bounded(0.0, 1.0), .log_jacobian = in.log_jacobian};
  }

  template <class T> T log_prior(const Mixture<T>& p) const {
    using std::log;
    T sum = 4 * log(p.theta) + 4 * log(1 - p.theta);  // Beta(5, 5)
    for (int k = 0; k < 2; ++k) sum -= (p.mu[k] * p.mu[k] + p.sigma[k] * p.sigma[k]) / (2 * 2.0 * 2.0);
    return sum + p.log_jacobian;
  }

  template <class T> T log_likelihood(const Mixture<T>& p, std::size_t n) const {
    using std::log;
    const auto log_normal = [&](int k) {
      const T z = (y_[n] - p.mu[k]) / p.sigma[k];
      return -z * z / 2 - log(p.sigma[k]) - 0.5 * std::log(2 * std::numbers::pi);
    };
    return stan::math::log_sum_exp(log(p.theta) + log_normal(0), log(1 - p.theta) + log_normal(1));
  }

  std::size_t dimension() const override { return 5; }
  std::size_t num_items() const override { return y_.size(); }
  std::vector<std::string> parameter_names() const override {
    return {"mu_ordered.1", "mu_ordered.2", "log_sigma.1", "log_sigma.2", "logit_theta"};
  }
  std::vector<std::string> quantity_names() const override { return {"mu.1", "mu.2"}; }
  void evaluate_quantities(std::span<const double> theta, sgmcmc::Workspace&, std::span<double> out) const override {
    const Mixture<double> p = parameters(theta);
    out[0] = p.mu[0];
    out[1] = p.mu[1];
  }

private:
  std::vector<double> y_;
};

sgmcmc::PluginInfo info() {
  return {"low_dim_gauss_mix", "posteriordb's two-component normal mixture. Keys: data (data.json: N, y)",
          "mu_ordered.1..2, log_sigma.1..2, logit_theta", GaussMix::autodiff_capabilities()};
}
std::unique_ptr<sgmcmc::Model> make(const sgmcmc::ModelContext& context) { return std::make_unique<GaussMix>(context); }
SGMCMC_MODEL_PLUGIN(info, make)
