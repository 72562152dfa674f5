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
#include <utility>
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

/// An estimator whose keys are read and checked, ready to build for the model it was read for.
using EstimatorRecipe = std::function<std::unique_ptr<Estimator>(const Model&)>;
/// Reads a section for a model (which gives defaults: batch_size = min(100, N), one pass).
using EstimatorReader = std::function<EstimatorRecipe(SectionReader, const Model&)>;
const std::vector<CatalogueEntry<EstimatorReader>>& estimator_catalogue();

inline constexpr const char* default_estimator = "minibatch";

/// The estimator named in `section` (default "minibatch"), built for `model`.
std::unique_ptr<Estimator> make_estimator(SectionReader section, const Model& model);

/// Why `chains` chains, each with the estimator `section` chooses, would hold more memory than its
/// memory_limit_mb allows (saga's tables), or "": a run checks this before building any chain.
std::string estimator_memory_refusal(SectionReader section, const Model& model, std::uint64_t chains);

/// Each estimator from its plain parameters (see :parameters for what these check), for `model`.
std::unique_ptr<Estimator> make_estimator(const ExactParameters& parameters, const Model& model);
std::unique_ptr<Estimator> make_estimator(const MinibatchParameters& parameters, const Model& model);
std::unique_ptr<Estimator> make_estimator(const CvParameters& parameters, const Model& model);
std::unique_ptr<Estimator> make_estimator(const SvrgParameters& parameters, const Model& model);
std::unique_ptr<Estimator> make_estimator(const SagaParameters& parameters, const Model& model);

}  // namespace sgmcmc

namespace sgmcmc {

namespace estimator_parts {

/// A catalogue entry whose keys are those of `Parameters::fields()`: its recipe is
/// `make_estimator(parameters, model)` with `parameters = Parameters::from_settings(section, model)`.
template <class Parameters>
CatalogueEntry<EstimatorReader> estimator_entry(std::string name, std::string description, std::string mh_refusal = {}) {
  std::vector<KeyDoc> documented = key_docs(Parameters::fields());
  return {std::move(name), std::move(description), keys_of(documented),
          [](SectionReader section, const Model& model) -> EstimatorRecipe {
            return [parameters = Parameters::from_settings(section, model)](const Model& target) {
              return make_estimator(parameters, target);
            };
          },
          std::move(mh_refusal), std::move(documented)};
}

}  // namespace estimator_parts

using namespace estimator_parts;

const std::vector<CatalogueEntry<EstimatorReader>>& estimator_catalogue() {
  // The keys, their defaults and docs are the parameter structs' field tables (`sgmcmc list`).
  static const std::vector<CatalogueEntry<EstimatorReader>> catalogue = {
      estimator_entry<ExactParameters>("exact", "full-data gradient (O(N) per step); for references and MALA/HMC"),
      estimator_entry<MinibatchParameters>("minibatch", "SGLD's estimate (N/n) Σ_S ∇f_i"),
      estimator_entry<CvParameters>("cv",
                                    "SGLD-CV control variates around θ̂ (Baker et al. 2019, eq. 4); θ̂ by a centring "
                                    "phase (SGD, or an SGLD burn-in) from the start point, or given"),
      estimator_entry<SvrgParameters>(
          "svrg", "SVRG-LD: control variates around a snapshot refreshed every `period` iterations (Dubey et al. 2016)",
          "svrg's estimate depends on the chain's history (a snapshot taken at an earlier state, which may move inside "
          "a block), so the reverse of a block cannot reproduce its kicks and the MH test is not exact; the test of "
          "Garriga-Alonso & Fortuin (2021, §4) needs every kick's minibatch drawn independently of the state: use "
          "'minibatch' or 'cv' (a fixed centre)"),
      estimator_entry<SagaParameters>(
          "saga",
          "SAGA-LD: table of the last gradient of every item (Dubey et al. 2016), N scalars for GLM models, N × s for "
          "sparse item gradients",
          "saga's estimate depends on the chain's history (its table holds gradients at earlier states and changes at "
          "every kick), so the reverse of a block cannot reproduce its kicks and the MH test is not exact; the test of "
          "Garriga-Alonso & Fortuin (2021, §4) needs every kick's minibatch drawn independently of the state: use "
          "'minibatch' or 'cv' (a fixed centre)"),
  };
  return catalogue;
}

std::unique_ptr<Estimator> make_estimator(SectionReader section, const Model& model) {
  return choose(estimator_catalogue(), section, default_estimator).read(section, model)(model);
}

std::string estimator_memory_refusal(SectionReader section, const Model& model, std::uint64_t chains) {
  if (choose(estimator_catalogue(), section, default_estimator).name != "saga") return "";
  const auto refusal = SagaEstimator::table_refusal(model, SagaParameters::from_settings(section, model).memory_limit_mb, chains);
  return refusal.empty() ? "" : fmt::format("{}: {}", section.describe("memory_limit_mb"), refusal);
}

// Each checks its parameters against its table first (what from_settings has checked already, for
// a struct built in code); the estimator then refuses what needs the model.
std::unique_ptr<Estimator> make_estimator(const ExactParameters&, const Model& model) {
  return std::make_unique<ExactEstimator>(model);
}
std::unique_ptr<Estimator> make_estimator(const MinibatchParameters& parameters, const Model& model) {
  check_fields(MinibatchParameters::fields(), parameters, "estimator minibatch");
  return std::make_unique<MinibatchEstimator>(parameters, model);
}
std::unique_ptr<Estimator> make_estimator(const CvParameters& parameters, const Model& model) {
  check_fields(CvParameters::fields(), parameters, "estimator cv");
  return std::make_unique<ControlVariateEstimator>(parameters, model);
}
std::unique_ptr<Estimator> make_estimator(const SvrgParameters& parameters, const Model& model) {
  check_fields(SvrgParameters::fields(), parameters, "estimator svrg");
  return std::make_unique<SvrgEstimator>(parameters, model);
}
std::unique_ptr<Estimator> make_estimator(const SagaParameters& parameters, const Model& model) {
  check_fields(SagaParameters::fields(), parameters, "estimator saga");
  return std::make_unique<SagaEstimator>(parameters, model);
}

}  // namespace sgmcmc