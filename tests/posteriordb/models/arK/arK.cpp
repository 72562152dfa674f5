// posteriordb's arK-arK: an autoregression of order K written with the autodiff SDK, the Stan
// model line by line:
//   alpha ~ N(0, 10²),  beta_k ~ N(0, 10²),  sigma ~ half-Cauchy(0, 2.5),
//   y_t ~ N(alpha + Σ_k beta_k y_{t-k}, sigma²),  t = K+1..T (the data: K, T, y in data.json).
// θ = (alpha, beta.1..K, log_sigma): σ > 0 is sampled as log σ, its Jacobian in log_prior.
// One item per t > K: the first K observations are conditioned on, as in the Stan model.
#include <cmath>
#include <numbers>
#include <sgmcmc/autodiff.hpp>
#include <sgmcmc/json_data.hpp>
#include <sgmcmc/plugin.hpp>

// parameters(θ): the constrained values and log|Jacobian|, computed once per batch; log_prior
// and log_likelihood take them (sgmcmc/autodiff.hpp).

template <class T>
struct Autoregression {
  T alpha;
  std::vector<T> beta;
  T sigma, log_jacobian;
};

class ArK final : public sgmcmc::autodiff::Model<ArK> {
public:
  explicit ArK(const sgmcmc::ModelContext& context) {
    const sgmcmc::JsonData data(context.settings.text("data", "data.json"));
    lags_ = data.count("K");
    y_ = data.numbers("y", data.count("T"));
    if (y_.size() <= lags_) throw sgmcmc::Error(context.settings.describe("data") + ": expected T > K");
  }

  template <class T> Autoregression<T> parameters(std::span<const T> theta) const {
    sgmcmc::autodiff::Parameters<T> in(theta);
    // Read in order (a braced list is evaluated left to right), the Jacobian last.
    return {.alpha = in.real(), .beta = in.reals(lags_), .sigma = in.positive(), .log_jacobian = in.log_jacobian};
  }

  template <class T> T log_prior(const Autoregression<T>& p) const {
    using std::log;
    T sum = -p.alpha * p.alpha / (2 * 10.0 * 10.0) - log(1 + (p.sigma / 2.5) * (p.sigma / 2.5));
    for (const T& b : p.beta) sum -= b * b / (2 * 10.0 * 10.0);
    return sum + p.log_jacobian;
  }

  /// Item i is y_t with t = K + i (0-based).
  template <class T> T log_likelihood(const Autoregression<T>& p, std::size_t i) const {
    using std::log;
    const std::size_t t = lags_ + i;
    T mean = p.alpha;
    for (std::size_t k = 1; k <= lags_; ++k) mean += p.beta[k - 1] * y_[t - k];
    const T z = (y_[t] - mean) / p.sigma;
    return -z * z / 2 - log(p.sigma) - 0.5 * std::log(2 * std::numbers::pi);
  }

  std::size_t dimension() const override { return lags_ + 2; }
  std::size_t num_items() const override { return y_.size() - lags_; }
  std::vector<std::string> parameter_names() const override {
    std::vector<std::string> names{"alpha"};
    for (std::size_t k = 1; k <= lags_; ++k) names.push_back("beta." + std::to_string(k));
    return names.push_back("log_sigma"), names;
  }

private:
  std::size_t lags_ = 0;
  std::vector<double> y_;
};

sgmcmc::PluginInfo info() {
  return {"arK", "posteriordb's AR(K). Keys: data (data.json: K, T, y)", "alpha, beta.1..K, log_sigma",
          ArK::autodiff_capabilities()};
}
std::unique_ptr<sgmcmc::Model> make(const sgmcmc::ModelContext& context) { return std::make_unique<ArK>(context); }
SGMCMC_MODEL_PLUGIN(info, make)
