// sgld: overdamped Langevin with a constant preconditioner (Welling & Teh 2011; Baker et al. 2019).
// The implementation of the partition sgld.cppm: its class, catalogue entry and key reader.
module;
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>
#include <fmt/format.h>
module sgmcmc.integrators;
import sgmcmc.sampler;
import sgmcmc.schedules;
import sgmcmc.error;

namespace sgmcmc::integrator_parts {

/// SGLD as Baker et al. (2019, §2) write it, preconditioned by a constant M⁻¹ (diagonal or dense):
/// θ' = θ - (ε/2) M⁻¹ ĝ(θ) + sqrt(ε T) M^{-1/2} ξ, ξ ~ N(0, I) (Welling & Teh 2011, eq. 4, with M = I),
/// M^{-1/2}ξ standing for any draw of N(0, M⁻¹) (Kξ for a dense metric, Metric).
/// It is the Euler–Maruyama step of the preconditioned Langevin diffusion
/// dθ = -M⁻¹∇U dt + sqrt(2T) M^{-1/2} dW (ε = 2h), which leaves exp(-U/T) invariant for any
/// constant positive M: the MALA proposal with a constant metric (Roberts & Stramer 2002;
/// Girolami & Calderhead 2011, with G(θ) = M). T = 1 samples the posterior. For positive
/// parameters θ' is reflected at 0, θ' ← |θ'| (Patterson & Teh 2013).
class Sgld final : public ScheduledIntegrator {
public:
  explicit Sgld(const SgldParameters& parameters) : ScheduledIntegrator(parameters) {}

  void step(ChainState& state, Estimator& estimator, ChainContext& context) override {
    const double epsilon = advance(state), noise = std::sqrt(epsilon * temperature_);
    estimator.estimate(state.theta, state.gradient, context);
    xi_.resize(state.theta.size());
    context.rng.fill_normal(xi_);  // one call, so the update below is a plain vectorisable loop
    if (mass_.dense()) {
      drift_.resize(state.theta.size());
      mass_.times_inverse(state.gradient, drift_);
      mass_.correlate_as_inverse(xi_);  // sqrt(εT) Kξ ~ N(0, εT M⁻¹)
      for (std::size_t j = 0; j < state.theta.size(); ++j) state.theta[j] += -0.5 * epsilon * drift_[j] + noise * xi_[j];
    } else {
      // With M = 1 the factors M⁻¹ and M^{-1/2} are exactly 1: the same bits as without a mass.
      const auto inverse = mass_.inverse(), inverse_sqrt = mass_.inverse_sqrt();
      for (std::size_t j = 0; j < state.theta.size(); ++j)
        state.theta[j] += -0.5 * epsilon * inverse[j] * state.gradient[j] + noise * inverse_sqrt[j] * xi_[j];
    }
    if (state.reflect_at_zero) mirror_positive(state.theta);
    state.gradient_valid = false;  // the estimate was at the old θ
  }

  std::string float_refusal() const override {
    if (!mass_.unit() || adaptation_.mass)
      return "sgld's float path has M = 1 only: leave integrator.mass at 1 and adapt_mass false";
    return {};
  }

  /// The same update with M = 1 in float (run.chain_precision = "float"): ξ drawn a chunk at a
  /// time into a buffer that stays in cache (Rng::fill_normal for float), and each chunk's move
  /// fused with the reflection and the chain's divergence check, so θ and ĝ are read once.
  void step_float(ChainState& state, FloatChainState& floats, Estimator& estimator, ChainContext& context) override {
    const double epsilon = advance(state);
    const auto drift = static_cast<float>(-0.5 * epsilon), noise = static_cast<float>(std::sqrt(epsilon * temperature_));
    estimator.estimate_float(floats.theta, floats.gradient, context);
    float_xi_.resize(float_chunk);
    const float bound = floats.bound;
    bool beyond = false;
    const std::size_t dimension = floats.theta.size();
    for (std::size_t begin = 0; begin < dimension; begin += float_chunk) {
      const std::size_t n = std::min(float_chunk, dimension - begin);
      context.rng.fill_normal(std::span(float_xi_).first(n));
      float* theta = floats.theta.data() + begin;
      const float* gradient = floats.gradient.data() + begin;
      const float* xi = float_xi_.data();
      if (state.reflect_at_zero)
        for (std::size_t j = 0; j < n; ++j) {
          theta[j] = std::abs(theta[j] + drift * gradient[j] + noise * xi[j]);
          beyond |= !(theta[j] <= bound);
        }
      else
        for (std::size_t j = 0; j < n; ++j) {
          theta[j] += drift * gradient[j] + noise * xi[j];
          beyond |= !(std::abs(theta[j]) <= bound);
        }
    }
    floats.beyond = beyond;
  }

private:
  static constexpr std::size_t float_chunk = 4096;  // normals per fill: 16 kB, in L1 for the move
  std::vector<double> xi_, drift_;  // scratch: this step's ξ and, dense, M⁻¹ĝ
  std::vector<float> float_xi_;     // scratch: the float step's chunk of ξ
};

CatalogueEntry<IntegratorReader> sgld_entry() {
  return integrator_entry<SgldParameters>(
      "sgld", "overdamped Langevin, θ' = θ - (ε/2)M⁻¹ĝ + sqrt(εT)M^{-1/2}ξ (step_size = ε)",
       "sgld computes no gradient at its proposal, which the MH energy error needs; use integrator 'mala' (the same "
       "update, step_size = ε, written as OBABO with c = 0)");
}

}  // namespace sgmcmc::integrator_parts

namespace sgmcmc {

using namespace integrator_parts;

const FieldTable<SgldParameters>& SgldParameters::fields() {
  static const FieldTable<SgldParameters> table = mass_integrator_fields<SgldParameters>();
  return table;
}

std::unique_ptr<Integrator> make_integrator(const SgldParameters& parameters) {
  check_fields(SgldParameters::fields(), parameters, "integrator sgld");
  return std::make_unique<Sgld>(parameters);
}

}  // namespace sgmcmc
