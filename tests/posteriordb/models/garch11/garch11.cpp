// posteriordb's garch-garch11: a GARCH(1,1) series (Bollerslev 1986) written with the autodiff
// SDK, the Stan model line by line:
//   sigma_1 given,  sigma_t² = alpha0 + alpha1 (y_{t-1} - mu)² + beta1 sigma_{t-1}²,
//   y_t ~ N(mu, sigma_t²),  t = 1..T (the data: T, y, sigma1 in data.json),
// with flat priors on mu ∈ ℝ, alpha0 > 0, 0 < alpha1 < 1 and 0 < beta1 < 1 - alpha1 (Stan's
// default: uniform on the constrained space, so log_prior is the Jacobian alone).
// θ = (mu, log_alpha0, logit_alpha1, logit_beta1_share): beta1 = (1 - alpha1) logistic(u), a
// bound that is itself a parameter. Each σ_t depends on the whole past, so the series is one item
// (an exact sampler only: there is no sum over independent rows to subsample). Quantities:
// alpha1 and beta1, as posteriordb's reference draws hold them.
#include <cmath>
#include <numbers>
#include <sgmcmc/autodiff.hpp>
#include <sgmcmc/json_data.hpp>
#include <sgmcmc/plugin.hpp>

// parameters(θ): the constrained values and log|Jacobian|, computed once per batch; log_prior
// and log_likelihood take them (sgmcmc/autodiff.hpp).
template <class T>
struct Garch {
  T mu, alpha0, alpha1, beta1, log_jacobian;
};

class Garch11 final : public sgmcmc::autodiff::Model<Garch11> {
public:
  explicit Garch11(const sgmcmc::ModelContext& context) {
    const sgmcmc::JsonData data(context.settings.text("data", "data.json"));
    y_ = data.numbers("y", data.count("T"));
    sigma1_ = data.number("sigma1");
    if (y_.empty() || !(sigma1_ > 0)) throw sgmcmc::Error(context.settings.describe("data") + ": expected T > 0 and sigma1 > 0");
  }

  template <class T> Garch<T> parameters(std::span<const T> theta) const {
    sgmcmc::autodiff::Parameters<T> in(theta);
    const T mu = in.real(), alpha0 = in.positive(), alpha1 = in.bounded(0.0, 1.0);
    const T beta1 = in.bounded(0.0, 1 - alpha1);
    return {mu, alpha0, alpha1, beta1, in.log_jacobian};
  }

  template <class T> T log_prior(const Garch<T>& p) const { return p.log_jacobian; }

  template <class T> T log_likelihood(const Garch<T>& p, std::size_t) const {
    using std::log;
    using std::sqrt;
    T sigma = sigma1_, sum = 0.0;
    for (std::size_t t = 0; t < y_.size(); ++t) {
      if (t > 0) sigma = sqrt(p.alpha0 + p.alpha1 * (y_[t - 1] - p.mu) * (y_[t - 1] - p.mu) + p.beta1 * sigma * sigma);
      const T z = (y_[t] - p.mu) / sigma;
      sum += -z * z / 2 - log(sigma) - 0.5 * std::log(2 * std::numbers::pi);
    }
    return sum;
  }

  std::size_t dimension() const override { return 4; }
  std::size_t num_items() const override { return 1; }
  std::vector<std::string> parameter_names() const override {
    return {"mu", "log_alpha0", "logit_alpha1", "logit_beta1_share"};
  }
  std::vector<std::string> quantity_names() const override { return {"alpha1", "beta1"}; }
  void evaluate_quantities(std::span<const double> theta, sgmcmc::Workspace&, std::span<double> out) const override {
    const Garch<double> p = parameters(theta);
    out[0] = p.alpha1;
    out[1] = p.beta1;
  }

private:
  std::vector<double> y_;
  double sigma1_ = 1.0;
};

sgmcmc::PluginInfo info() {
  return {"garch11", "posteriordb's GARCH(1,1). Keys: data (data.json: T, y, sigma1)",
          "mu, log_alpha0, logit_alpha1, logit_beta1_share", Garch11::autodiff_capabilities()};
}
std::unique_ptr<sgmcmc::Model> make(const sgmcmc::ModelContext& context) { return std::make_unique<Garch11>(context); }
SGMCMC_MODEL_PLUGIN(info, make)
