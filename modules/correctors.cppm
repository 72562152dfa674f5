// Correctors: what happens at the end of a block of integrator steps (SCIENCE.md, "Correctors").
// `none` accepts every move (SGLD, SGHMC, SGLD-CV as in seed 1); a Metropolis–Hastings test over
// K steps uses the integrator's ChainState::energy_error and the model's exact potential.
module;
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>
export module sgmcmc.correctors;
export import sgmcmc.integrators;

export namespace sgmcmc {

struct Decision {
  double accept_stat = 1.0;  // acceptance probability of the block (Stan CSV's accept_stat__)
  bool accepted = true;
};

class Corrector {
public:
  virtual ~Corrector() = default;
  /// K, the number of integrator steps per block.
  virtual std::size_t block_length() const { return 1; }
  /// Called before the first step of a block (an MH corrector saves (θ_0, m_0) here).
  virtual void begin_block(ChainState& state, ChainContext& context) = 0;
  /// Called after the last step of a block; may restore the saved state.
  virtual Decision end_block(ChainState& state, ChainContext& context) = 0;
};

using CorrectorFactory = std::function<std::unique_ptr<Corrector>(const Settings&)>;
const std::vector<CatalogueEntry<CorrectorFactory>>& corrector_catalogue();

/// The corrector named in `section` (default "none").
std::unique_ptr<Corrector> make_corrector(const Settings& section);

}  // namespace sgmcmc

module :private;

namespace sgmcmc {

namespace {

/// Accepts every move: the chain is the integrator's Markov chain, biased by its discretisation.
class NoCorrection final : public Corrector {
public:
  void begin_block(ChainState& state, ChainContext&) override { state.energy_error = 0.0; }
  Decision end_block(ChainState&, ChainContext&) override { return {}; }
};

}  // namespace

const std::vector<CatalogueEntry<CorrectorFactory>>& corrector_catalogue() {
  static const std::vector<CatalogueEntry<CorrectorFactory>> catalogue = {
      {"none", "accept every move (no Metropolis-Hastings test)", {},
       [](const Settings&) -> std::unique_ptr<Corrector> { return std::make_unique<NoCorrection>(); }},
  };
  return catalogue;
}

std::unique_ptr<Corrector> make_corrector(const Settings& section) {
  return choose(corrector_catalogue(), section, "none").make(section);
}

}  // namespace sgmcmc
