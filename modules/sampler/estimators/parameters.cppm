// The estimators' plain parameters: one struct per catalogue entry, with the defaults of the
// Settings path, and make_estimator overloads taking them (sgmcmc.estimators). Each `from_settings`
// reads its entry's keys, with the errors naming where a key was set, and resolves the defaults
// that depend on the model (the batch size, one pass), so the run's manifest records them; it is
// defined next to the estimator that uses it. The estimators built from a struct refuse only what
// they cannot run (a batch of 0 items or more than N, a centre of the wrong dimension, p_i ∝ L_i
// without replacement) and a SAGA table above its memory limit; the checks against the model's
// capabilities are from_settings', which names the key.
module;
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>
export module sgmcmc.estimators:parameters;
import sgmcmc.sampler;
export import sgmcmc.schedules;

export namespace sgmcmc {

/// exact: ∇U(θ) from every item; it has no keys.
struct ExactParameters {
  static ExactParameters from_settings(const Settings& section, const Model& model);
};

/// minibatch: (N/n) Σ_S ∇f_i, S drawn uniformly.
struct MinibatchParameters {
  std::optional<std::size_t> batch_size = std::nullopt;  // n, 1 <= n <= N; unset: min(100, N)
  bool replacement = false;               // draw S with replacement
  static MinibatchParameters from_settings(const Settings& section, const Model& model);
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
  /// Reads batch_size, sampling and replacement, in that order.
  static ItemSamplingParameters from_settings(const Settings& section, const Model& model);
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
  static CvParameters from_settings(const Settings& section, const Model& model);
};

/// svrg: SVRG-LD, control variates around a snapshot refreshed every `period` iterations of the chain.
struct SvrgParameters {
  ItemSamplingParameters batches = {};
  std::optional<std::uint64_t> period = std::nullopt;  // m >= 1; unset: one pass, ceil(N/n)
  static SvrgParameters from_settings(const Settings& section, const Model& model);
};

/// saga: SAGA-LD, a table of the last gradient of every item.
struct SagaParameters {
  ItemSamplingParameters batches = {};
  double memory_limit_mb = 1024.0;  // all chains' tables together; more is refused before allocation
  static SagaParameters from_settings(const Settings& section, const Model& model);
};

}  // namespace sgmcmc
