// Gradient estimators: each returns an unbiased estimate of ∇U(θ) (modules/README.md, "Gradient
// estimators") and counts the item gradients it evaluates, the research measure of cost. This unit
// holds the catalogue; the estimators are in the partitions: minibatch (exact, minibatch and
// minibatch drawing), weighted_batches (p_i ∝ L_i), control_variates (cv, svrg) and saga, each
// built from its plain parameters (the partition `parameters`).
module;
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include <fmt/format.h>
export module sgmcmc.estimators;
export import sgmcmc.sampler;
export import :minibatch;
export import :parameters;
import :weighted_batches;
import :control_variates;
import :saga;

export namespace sgmcmc {

using EstimatorFactory = std::function<std::unique_ptr<Estimator>(const Settings&, const Model&)>;
const std::vector<CatalogueEntry<EstimatorFactory>>& estimator_catalogue();

inline constexpr const char* default_estimator = "minibatch";

/// The estimator named in `section` (default "minibatch"), built for `model`.
std::unique_ptr<Estimator> make_estimator(const Settings& section, const Model& model);

/// Why `chains` chains, each with the estimator `section` chooses, would hold more memory than its
/// memory_limit_mb allows (saga's tables), or "": a run checks this before building any chain.
std::string estimator_memory_refusal(const Settings& section, const Model& model, std::uint64_t chains);

/// Each estimator from its plain parameters (see :parameters for what these check), for `model`.
std::unique_ptr<Estimator> make_estimator(const ExactParameters& parameters, const Model& model);
std::unique_ptr<Estimator> make_estimator(const MinibatchParameters& parameters, const Model& model);
std::unique_ptr<Estimator> make_estimator(const CvParameters& parameters, const Model& model);
std::unique_ptr<Estimator> make_estimator(const SvrgParameters& parameters, const Model& model);
std::unique_ptr<Estimator> make_estimator(const SagaParameters& parameters, const Model& model);

}  // namespace sgmcmc

namespace sgmcmc {

namespace estimator_parts {

template <class Parameters>
EstimatorFactory factory() {
  return [](const Settings& section, const Model& model) {
    return make_estimator(Parameters::from_settings(section, model), model);
  };
}

}  // namespace estimator_parts

using namespace estimator_parts;

const std::vector<CatalogueEntry<EstimatorFactory>>& estimator_catalogue() {
  static const std::vector<CatalogueEntry<EstimatorFactory>> catalogue = {
      {"exact", "full-data gradient (O(N) per step); for references and MALA/HMC", {}, factory<ExactParameters>()},
      {"minibatch", "SGLD's estimate (N/n) Σ_S ∇f_i; keys batch_size (100), replacement (false)",
       {"batch_size", "replacement"}, factory<MinibatchParameters>()},
      {"cv",
       "SGLD-CV control variates around θ̂ (Baker et al. 2019, eq. 4); θ̂ by a centring phase from the start point, "
       "or given; keys batch_size, replacement, sampling (uniform|lipschitz), centre (θ̂ as \"x1, x2, ...\"), "
       "centring (sgd: SGD's last iterate | sgld: mean of an SGLD burn-in's second half), sgd_iterations (centring "
       "steps; one pass), sgd_schedule (polynomial for sgd, constant for sgld), sgd_step_size (0: 1/λ̂, the "
       "estimated largest curvature), sgd_decay_b (1), sgd_decay_c (1), centre_passes (1; full passes averaged for "
       "∇U(θ̂), latent-variable models)",
       {"batch_size", "replacement", "sampling", "centre", "centring", "sgd_iterations", "sgd_schedule", "sgd_step_size",
        "sgd_decay_b", "sgd_decay_c", "centre_passes"},
       factory<CvParameters>()},
      {"svrg",
       "SVRG-LD: control variates around a snapshot refreshed every `period` iterations (Dubey et al. 2016); "
       "keys batch_size, replacement, sampling, period (one pass)",
       {"batch_size", "replacement", "sampling", "period"}, factory<SvrgParameters>(),
       "svrg's estimate depends on the chain's history (a snapshot taken at an earlier state, which may move inside "
       "a block), so the reverse of a block cannot reproduce its kicks and the MH test is not exact; the test of "
       "Garriga-Alonso & Fortuin (2021, §4) needs every kick's minibatch drawn independently of the state: use "
       "'minibatch' or 'cv' (a fixed centre)"},
      {"saga",
       "SAGA-LD: table of the last gradient of every item (Dubey et al. 2016), N scalars for GLM models, N × s for "
       "sparse item gradients; "
       "keys batch_size, replacement, sampling, memory_limit_mb (1024, all chains together)",
       {"batch_size", "replacement", "sampling", "memory_limit_mb"}, factory<SagaParameters>(),
       "saga's estimate depends on the chain's history (its table holds gradients at earlier states and changes at "
       "every kick), so the reverse of a block cannot reproduce its kicks and the MH test is not exact; the test of "
       "Garriga-Alonso & Fortuin (2021, §4) needs every kick's minibatch drawn independently of the state: use "
       "'minibatch' or 'cv' (a fixed centre)"},
  };
  return catalogue;
}

std::unique_ptr<Estimator> make_estimator(const Settings& section, const Model& model) {
  return choose(estimator_catalogue(), section, default_estimator).make(section, model);
}

std::string estimator_memory_refusal(const Settings& section, const Model& model, std::uint64_t chains) {
  if (choose(estimator_catalogue(), section, default_estimator).name != "saga") return "";
  const auto refusal = SagaEstimator::table_refusal(model, SagaParameters::from_settings(section, model).memory_limit_mb, chains);
  return refusal.empty() ? "" : fmt::format("{}: {}", section.describe("memory_limit_mb"), refusal);
}

std::unique_ptr<Estimator> make_estimator(const ExactParameters&, const Model& model) {
  return std::make_unique<ExactEstimator>(model);
}
std::unique_ptr<Estimator> make_estimator(const MinibatchParameters& parameters, const Model& model) {
  return std::make_unique<MinibatchEstimator>(parameters, model);
}
std::unique_ptr<Estimator> make_estimator(const CvParameters& parameters, const Model& model) {
  return std::make_unique<ControlVariateEstimator>(parameters, model);
}
std::unique_ptr<Estimator> make_estimator(const SvrgParameters& parameters, const Model& model) {
  return std::make_unique<SvrgEstimator>(parameters, model);
}
std::unique_ptr<Estimator> make_estimator(const SagaParameters& parameters, const Model& model) {
  return std::make_unique<SagaEstimator>(parameters, model);
}

}  // namespace sgmcmc