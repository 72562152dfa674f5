// The estimators' plain parameters: one struct per catalogue entry, and make_estimator overloads
// taking them (sgmcmc.estimators). Its member initialisers are the keys' defaults, and its
// `fields()` table (sgmcmc.fields) names each key, its constraint and its doc; the catalogue's key
// list, `sgmcmc list` and runners/README.md's estimator key table come from it, and
// make_estimator(parameters, model) checks a struct built in code against it (check_fields).
// The defaults that depend on the model (the batch size min(100, N), one pass ceil(N/n)) are unset
// members: `from_settings(section, model)` seeds them from the model before reading the table, so
// the run's manifest records them, and then runs the checks that need the model (a batch larger
// than N, p_i ∝ L_i without the capability, a centre of the wrong dimension, a SAGA table above
// its memory limit), naming the key. The estimators refuse what the table cannot see (a batch
// of more than N items, a centre of the wrong dimension) when built from a struct.
module;
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include <fmt/format.h>
export module sgmcmc.estimators:parameters;
import sgmcmc.sampler;
import sgmcmc.error;
export import sgmcmc.schedules;

export namespace sgmcmc {

/// exact: ∇U(θ) from every item; it has no keys.
struct ExactParameters {
  static const FieldTable<ExactParameters>& fields();
  static ExactParameters from_settings(SectionReader section, const Model& model);
};

/// minibatch: (N/n) Σ_S ∇f_i, S drawn uniformly.
struct MinibatchParameters {
  std::optional<std::size_t> batch_size = std::nullopt;  // n, 1 <= n <= N; unset: min(100, N)
  bool replacement = false;               // draw S with replacement
  static const FieldTable<MinibatchParameters>& fields();
  static MinibatchParameters from_settings(SectionReader section, const Model& model);
};

/// How the items of S are drawn (Baker et al. 2019, eq. 4): p_i = 1/N, or p_i ∝ L_i (the model's
/// per-item Lipschitz bounds, capability `lipschitz-bounds`).
enum class Sampling { uniform, lipschitz };

/// The batch of the control-variate estimators (cv, svrg, saga).
struct ItemSamplingParameters {
  std::optional<std::size_t> batch_size = std::nullopt;  // n, 1 <= n <= N; unset: min(100, N)
  Sampling sampling = Sampling::uniform;
  /// Unset: false for uniform, true for lipschitz (independent draws, which need replacement).
  std::optional<bool> replacement = std::nullopt;
  /// Whether S is drawn with replacement: `replacement`, or its default for `sampling`.
  bool with_replacement() const { return replacement.value_or(sampling != Sampling::uniform); }
  /// batch_size, sampling and replacement, read in that order.
  static const FieldTable<ItemSamplingParameters>& fields();
  static ItemSamplingParameters from_settings(SectionReader section, const Model& model);
};

/// How cv finds θ̂ from the start point: the last iterate of SGD (Baker et al. 2019, §3.1), or the
/// mean of the second half of an SGLD burn-in's iterates (an estimate of the posterior mean).
enum class Centring { sgd, sgld };

/// cv: SGLD-CV around θ̂ (Baker et al. 2019, Algorithm 1), θ̂ found by a centring phase from the
/// start point, or given.
struct CvParameters {
  ItemSamplingParameters batches = {};
  Centring centring = Centring::sgd;
  std::optional<std::uint64_t> sgd_iterations = std::nullopt;  // centring steps; unset: one pass, ceil(N/n)
  SgdScheduleParameters sgd = {};  // the centring steps h_k (from Settings, sgld's default schedule is constant)
  std::size_t centre_passes = 1;  // full passes averaged for ∇U(θ̂) (latent-variable models)
  std::optional<std::vector<double>> centre = std::nullopt;  // θ̂, one number per parameter; unset: centring
  static const FieldTable<CvParameters>& fields();
  static CvParameters from_settings(SectionReader section, const Model& model);
};

/// svrg: SVRG-LD, control variates around a snapshot refreshed every `period` iterations of the chain.
struct SvrgParameters {
  ItemSamplingParameters batches = {};
  std::optional<std::uint64_t> period = std::nullopt;  // m >= 1; unset: one pass, ceil(N/n)
  static const FieldTable<SvrgParameters>& fields();
  static SvrgParameters from_settings(SectionReader section, const Model& model);
};

/// saga: SAGA-LD, a table of the last gradient of every item.
struct SagaParameters {
  ItemSamplingParameters batches = {};
  double memory_limit_mb = 1024.0;  // all chains' tables together; more is refused before allocation
  static const FieldTable<SagaParameters>& fields();
  static SagaParameters from_settings(SectionReader section, const Model& model);
};

}  // namespace sgmcmc

namespace sgmcmc::estimator_parts {

/// batch_size, read by every estimator with a batch. Its default needs the model: from_settings
/// seeds it with default_batch_size(model); a struct built in code leaves it to the estimator.
template <class P>
Field<P> batch_size_field() {
  return seeded_integer_field<P>("batch_size", &P::batch_size, "min(100, N)", "n, the items of each estimate's batch S",
                          at_least(1));
}

}  // namespace sgmcmc::estimator_parts
