// posteriordb's eight_schools-eight_schools_noncentered (Rubin 1981; the non-centred form of
// Gelman et al. 2013, BDA3 §5.5) written with the autodiff SDK, the Stan model line by line:
//   theta_trans_j ~ N(0, 1),  mu ~ N(0, 5),  tau ~ half-Cauchy(0, 5),
//   y_j ~ N(mu + tau theta_trans_j, sigma_j²),  j = 1..J (the data: J, y, sigma in data.json).
// θ = (theta_trans.1..J, mu, log_tau): τ > 0 is sampled as log τ, its Jacobian in log_prior.
// One item per school. Quantities: theta.j = mu + tau theta_trans_j (Stan's transformed
// parameters) and tau, as posteriordb's reference draws hold them.
#include <cmath>
#include <numbers>
#include <sgmcmc/autodiff.hpp>
#include <sgmcmc/json_data.hpp>
#include <sgmcmc/plugin.hpp>

// parameters(θ): the constrained values and log|Jacobian|, computed once per batch; log_prior
// and log_likelihood take them (sgmcmc/autodiff.hpp).

template <class T>
struct Schools {
  std::vector<T> theta_trans;
  T mu, tau, log_jacobian;
};

class EightSchools final : public sgmcmc::autodiff::Model<EightSchools> {
public:
  explicit EightSchools(const sgmcmc::ModelContext& context) {
    const sgmcmc::JsonData data(context.settings.text("data", "data.json"));
    const std::size_t schools = data.count("J");
    y_ = data.numbers("y", schools);
    sigma_ = data.numbers("sigma", schools);
  }

  template <class T> Schools<T> parameters(std::span<const T> theta) const {
    sgmcmc::autodiff::Parameters<T> in(theta);
    // Read in order (a braced list is evaluated left to right), the Jacobian last.
    return {.theta_trans = in.reals(y_.size()), .mu = in.real(), .tau = in.positive(), .log_jacobian = in.log_jacobian};
  }

  template <class T> T log_prior(const Schools<T>& p) const {
    using std::log;
    T sum = -p.mu * p.mu / (2 * 5.0 * 5.0) - log(1 + (p.tau / 5.0) * (p.tau / 5.0));
    for (const T& t : p.theta_trans) sum -= t * t / 2;
    return sum + p.log_jacobian;
  }

  template <class T> T log_likelihood(const Schools<T>& p, std::size_t j) const {
    const T z = (y_[j] - (p.mu + p.tau * p.theta_trans[j])) / sigma_[j];
    return -z * z / 2 - std::log(sigma_[j]) - 0.5 * std::log(2 * std::numbers::pi);
  }

  std::size_t dimension() const override { return y_.size() + 2; }
  std::size_t num_items() const override { return y_.size(); }
  std::vector<std::string> parameter_names() const override {
    std::vector<std::string> names;
    for (std::size_t j = 1; j <= y_.size(); ++j) names.push_back("theta_trans." + std::to_string(j));
    return names.push_back("mu"), names.push_back("log_tau"), names;
  }
  std::vector<std::string> quantity_names() const override {
    std::vector<std::string> names;
    for (std::size_t j = 1; j <= y_.size(); ++j) names.push_back("theta." + std::to_string(j));
    return names.push_back("tau"), names;
  }
  void evaluate_quantities(std::span<const double> theta, sgmcmc::Workspace&, std::span<double> out) const override {
    const Schools<double> p = parameters(theta);
    for (std::size_t j = 0; j < y_.size(); ++j) out[j] = p.mu + p.tau * p.theta_trans[j];
    out[y_.size()] = p.tau;
  }

private:
  std::vector<double> y_, sigma_;
};

sgmcmc::PluginInfo info() {
  return {"eight_schools_noncentered", "posteriordb's eight schools, non-centred. Keys: data (data.json: J, y, sigma)",
          "theta_trans.1..J, mu, log_tau", EightSchools::autodiff_capabilities()};
}
std::unique_ptr<sgmcmc::Model> make(const sgmcmc::ModelContext& context) { return std::make_unique<EightSchools>(context); }
SGMCMC_MODEL_PLUGIN(info, make)
