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
  static ExactParameters from_settings(const Settings& section, const Model& model);
};

/// minibatch: (N/n) Σ_S ∇f_i, S drawn uniformly.
struct MinibatchParameters {
  std::optional<std::size_t> batch_size = std::nullopt;  // n, 1 <= n <= N; unset: min(100, N)
  bool replacement = false;               // draw S with replacement
  static const FieldTable<MinibatchParameters>& fields();
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
  /// Whether S is drawn with replacement: `replacement`, or its default for `sampling`.
  bool with_replacement() const { return replacement.value_or(sampling != Sampling::uniform); }
  /// batch_size, sampling and replacement, read in that order.
  static const FieldTable<ItemSamplingParameters>& fields();
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
  static const FieldTable<CvParameters>& fields();
  static CvParameters from_settings(const Settings& section, const Model& model);
};

/// svrg: SVRG-LD, control variates around a snapshot refreshed every `period` iterations of the chain.
struct SvrgParameters {
  ItemSamplingParameters batches = {};
  std::optional<std::uint64_t> period = std::nullopt;  // m >= 1; unset: one pass, ceil(N/n)
  static const FieldTable<SvrgParameters>& fields();
  static SvrgParameters from_settings(const Settings& section, const Model& model);
};

/// saga: SAGA-LD, a table of the last gradient of every item.
struct SagaParameters {
  ItemSamplingParameters batches = {};
  double memory_limit_mb = 1024.0;  // all chains' tables together; more is refused before allocation
  static const FieldTable<SagaParameters>& fields();
  static SagaParameters from_settings(const Settings& section, const Model& model);
};

}  // namespace sgmcmc

namespace sgmcmc::estimator_parts {

// Field-table helpers for the keys whose default depends on the model or on another key. They
// belong beside sgmcmc.fields' and may move there; kept here so that sgmcmc.fields, which every
// module imports, did not change with the estimators' tables.

/// The struct `section` describes, read from `start` (P's defaults with those that depend on the
/// model filled in) rather than from P{}: otherwise as read_fields.
template <class P>
P read_fields_from(const FieldTable<P>& table, const Settings& section, P start) {
  for (const auto& field : table) {
    field.read(section, start);
    if (!field.problem) continue;
    if (const std::string problem = field.problem(start); !problem.empty())
      throw Error(fmt::format("{}: {}", section.describe(field.shown.key), problem));
  }
  return start;
}

/// An integer key whose member is unset by default, the default then depending on the model:
/// from_settings seeds the member with it before reading (read_fields_from), so that the manifest
/// records it, and `shown_default` says what it is, for the docs ("min(100, N)"). An unseeded
/// member stays unset unless the key is given. Its constraint is checked on the value as read.
template <class P, class Integer>
Field<P> seeded_integer_field(std::string key, std::optional<Integer> P::*member, std::string shown_default,
                              std::string doc, Constraint constraint) {
  return {{key, std::move(shown_default), constraint.summary, std::move(doc)},
          [key, member, constraint](const Settings& section, P& p) {
            if (!(p.*member) && !section.contains(key)) return;
            const std::int64_t value = section.integer(key, static_cast<std::int64_t>((p.*member).value_or(0)));
            if (const std::string problem = violation(constraint, static_cast<double>(value)); !problem.empty())
              throw Error(fmt::format("{}: {}", section.describe(key), problem));
            p.*member = static_cast<Integer>(value);
          },
          [member, constraint](const P& p) {
            return p.*member ? violation(constraint, static_cast<double>(*(p.*member))) : std::string();
          }};
}

/// A true/false key whose member is unset by default, the default then computed from members read
/// before it (`fallback`); `shown_default` says how, for the docs.
template <class P>
Field<P> fallback_flag_field(std::string key, std::optional<bool> P::*member, std::function<bool(const P&)> fallback,
                             std::string shown_default, std::string doc) {
  return {{key, std::move(shown_default), "", std::move(doc)},
          [key, member, fallback](const Settings& section, P& p) {
            p.*member = section.flag(key, (p.*member).value_or(fallback(p)));
          }};
}

/// "a, b, c": the names of a choice key's values.
template <class Value>
std::string choice_names(const std::vector<std::pair<std::string, Value>>& choices) {
  std::vector<std::string> names;
  for (const auto& choice : choices) names.push_back(choice.first);
  return fmt::format("{}", fmt::join(names, ", "));
}

/// The value of `choices` that `section` names for `key`, `in_force` when the key is unset; an
/// unknown name is an Error naming the key, where it was set and the known names, as choice_field's
/// (for a choice whose default depends on another key).
template <class Value>
Value read_choice(const Settings& section, const std::string& key,
                  const std::vector<std::pair<std::string, Value>>& choices, const Value& in_force) {
  std::string in_force_name;
  for (const auto& [name, value] : choices)
    if (value == in_force) in_force_name = name;
  const std::string wanted = section.text(key, in_force_name);
  for (const auto& [name, value] : choices)
    if (name == wanted) return value;
  throw Error(fmt::format("{}: unknown {} '{}'; known: {}", section.describe(key), key, wanted, choice_names(choices)));
}

/// batch_size, read by every estimator with a batch. Its default needs the model: from_settings
/// seeds it with default_batch_size(model); a struct built in code leaves it to the estimator.
template <class P>
Field<P> batch_size_field() {
  return seeded_integer_field<P>("batch_size", &P::batch_size, "min(100, N)", "n, the items of each estimate's batch S",
                          at_least(1));
}

}  // namespace sgmcmc::estimator_parts
