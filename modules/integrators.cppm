// Integrators: one step of a discretised Langevin dynamics driven by a gradient estimate
// (SCIENCE.md, "Integrators"). The state they move is ChainState.
module;
#include <cmath>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>
export module sgmcmc.integrators;
export import sgmcmc.estimators;

export namespace sgmcmc {

/// What a chain carries from step to step.
struct ChainState {
  std::vector<double> theta;
  std::vector<double> momentum;  // empty for integrators without momentum
  /// An estimate ĝ(θ) at the current θ, when `gradient_valid`. Integrators that need the same
  /// vector on both sides of a point (OBABO under an MH corrector, SCIENCE.md) reuse it; anything
  /// that moves θ outside an integrator (mirroring, a model's after_step) clears the flag.
  std::vector<double> gradient;
  bool gradient_valid = false;
  /// The integrator's share of the MH energy error ΔH̃ accumulated over the current block: every
  /// term but U(θ_K) - U(θ_0) (SCIENCE.md, "Correctors"). Correctors read it and reset it, and
  /// never need to know how an integrator computes it.
  double energy_error = 0.0;
};

class Integrator {
public:
  virtual ~Integrator() = default;
  /// Sizes the state's vectors for dimension d.
  virtual void initialise(ChainState& state, std::size_t dimension) const;
  /// One step from state.theta (and momentum).
  virtual void step(ChainState& state, Estimator& estimator, ChainContext& context) = 0;
  /// The step size of the last step, as written in Stan CSV's stepsize__.
  virtual double step_size() const = 0;
};

using IntegratorFactory = std::function<std::unique_ptr<Integrator>(const Settings&)>;
const std::vector<CatalogueEntry<IntegratorFactory>>& integrator_catalogue();

/// The integrator named in `section` (default "sgld").
std::unique_ptr<Integrator> make_integrator(const Settings& section);

}  // namespace sgmcmc

module :private;

namespace sgmcmc {

void Integrator::initialise(ChainState& state, std::size_t dimension) const {
  state.theta.resize(dimension);
  state.gradient.resize(dimension);
}

namespace {

/// SGLD, seed 1's convention: θ' = θ - (ε/2) ĝ(θ) + sqrt(ε T) ξ, ξ ~ N(0, I)
/// (Welling & Teh 2011, eq. 4; SCIENCE.md "SGLD"). T = 1 samples the posterior.
class Sgld final : public Integrator {
public:
  explicit Sgld(const Settings& section)
      : step_size_(section.positive_number("step_size", 1e-4)),
        temperature_(section.positive_number("temperature", 1.0)),
        noise_scale_(std::sqrt(step_size_ * temperature_)) {}

  void step(ChainState& state, Estimator& estimator, ChainContext& context) override {
    estimator.estimate(state.theta, state.gradient, context);
    for (std::size_t j = 0; j < state.theta.size(); ++j)
      state.theta[j] += -0.5 * step_size_ * state.gradient[j] + noise_scale_ * context.rng.normal();
    state.gradient_valid = false;  // the estimate was at the old θ
  }

  double step_size() const override { return step_size_; }

private:
  double step_size_;
  double temperature_;
  double noise_scale_;
};

}  // namespace

const std::vector<CatalogueEntry<IntegratorFactory>>& integrator_catalogue() {
  static const std::vector<CatalogueEntry<IntegratorFactory>> catalogue = {
      {"sgld", "overdamped Langevin, θ' = θ - (ε/2)ĝ + sqrt(εT)ξ; keys step_size (1e-4), temperature (1)",
       {"step_size", "temperature"},
       [](const Settings& section) -> std::unique_ptr<Integrator> { return std::make_unique<Sgld>(section); }},
  };
  return catalogue;
}

std::unique_ptr<Integrator> make_integrator(const Settings& section) {
  return choose(integrator_catalogue(), section, "sgld").make(section);
}

}  // namespace sgmcmc
