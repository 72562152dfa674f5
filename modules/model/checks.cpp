// The model checks' definitions (their interface, sgmcmc.model_checks, is modules/model/checks.cppm;
// what they share, modules/model/check_probe.cppm): gradients against finite differences, batches
// against sums of items, quantities of interest, reproducibility and thread safety; the optional
// capabilities' checks are in capability_checks.cpp.
module;
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <numeric>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>
#include <fmt/format.h>
module sgmcmc.model_checks;

namespace sgmcmc::model_check_parts {

constexpr double epsilon = std::numeric_limits<double>::epsilon();

double worst(const Vector& a, const Vector& b, double relative) {
  double result = 0.0;
  for (std::size_t j = 0; j < a.size(); ++j)
    result = std::max(result, std::abs(a[j] - b[j]) / (relative * std::max({1.0, std::abs(a[j]), std::abs(b[j])})));
  return result;
}

/// Central finite differences of `f` at θ against `gradient`. Step h_j = 1e-5·max(1, |θ_j|).
/// Error of a central difference: h²|f'''|/6 (truncation) + 2ε|f|/h (rounding). The tolerance is
/// 1e-5 relative (truncation at h = 1e-5 is ~1e-10·|f'''|, far below) plus 100× the rounding
/// term, so an exact gradient passes and a wrong one (a sign, a factor, a missing term) fails.
CheckOutcome finite_differences(const std::string& name, const Vector& theta, const Vector& gradient,
                                const std::function<double(const Vector&)>& f) {
  double worst_ratio = 0.0;
  std::string detail;
  for (std::size_t j = 0; j < theta.size(); ++j) {
    const double h = 1e-5 * std::max(1.0, std::abs(theta[j]));
    Vector plus = theta, minus = theta;
    plus[j] += h;
    minus[j] -= h;
    const double f_plus = f(plus), f_minus = f(minus);
    const double difference = (f_plus - f_minus) / (2 * h);
    const double tolerance = 1e-5 * std::max({1.0, std::abs(gradient[j]), std::abs(difference)}) +
                             100 * epsilon * (std::abs(f_plus) + std::abs(f_minus)) / h;
    const double ratio = std::abs(gradient[j] - difference) / tolerance;
    if (ratio > worst_ratio || !std::isfinite(ratio)) {
      worst_ratio = std::isfinite(ratio) ? ratio : INFINITY;
      detail = fmt::format("coordinate {}: gradient {:.10g}, finite difference {:.10g}", j, gradient[j], difference);
    }
  }
  return {name, worst_ratio <= 1.0 ? CheckOutcome::Status::passed : CheckOutcome::Status::failed, detail};
}

CheckOutcome compare(const std::string& name, double ratio, const std::string& detail) {
  return {name, ratio <= 1.0 ? CheckOutcome::Status::passed : CheckOutcome::Status::failed, detail};
}

CheckOutcome skipped(const std::string& name, const std::string& why) { return {name, CheckOutcome::Status::skipped, why}; }

Probe make_probe(std::shared_ptr<const Model> model) {
  Probe probe{model, model->capabilities(), model->make_workspace(), {}, {}, {}};
  Rng rng(2718, 28);
  const std::size_t d = model->dimension(), n = model->num_items();
  for (int k = 0; k < 3; ++k) {
    Vector theta(d);
    model->initial_point(theta, rng);
    for (double& x : theta) x += 0.5 * rng.normal();
    if (probe.capabilities.positive_parameters)
      for (double& x : theta) x = std::abs(x) + 0.1;
    probe.points.push_back(theta);
  }
  for (std::size_t k = 0; k < std::min<std::size_t>(n, 7); ++k) {
    probe.items.push_back(rng.index(n));
    probe.weights.push_back(0.5 + 1.5 * rng.uniform());
  }
  return probe;
}

std::string item_list(const Probe& probe) { return fmt::format("items {}", fmt::join(probe.items, ",")); }

std::vector<CheckOutcome> gradient_checks(const Probe& probe) {
  std::vector<CheckOutcome> outcomes;
  const auto& model = *probe.model;
  for (std::size_t p = 0; p < probe.points.size(); ++p) {
    const Vector& theta = probe.points[p];
    Vector prior(theta.size(), 0.0);
    model.add_prior_gradient_given(theta, prior, *probe.workspace);
    outcomes.push_back(finite_differences(fmt::format("prior gradient matches finite differences (point {})", p + 1), theta,
                                          prior, [&](const Vector& t) { return model.prior_potential_given(t, *probe.workspace); }));
    const std::string name = fmt::format("batch gradient matches finite differences of the batch potential (point {})", p + 1);
    if (!probe.capabilities.exact_log_likelihood) {
      outcomes.push_back(skipped(name, "needs the exact-log-likelihood capability"));
      continue;
    }
    auto outcome = finite_differences(name, theta, probe.gradient(theta, probe.items, probe.weights),
                                      [&](const Vector& t) { return probe.potential(t, probe.items, probe.weights); });
    outcome.detail += " (" + item_list(probe) + ")";
    outcomes.push_back(outcome);
  }
  return outcomes;
}

/// data_potential_and_gradient (the MH corrector's one pass at a block's end) adds what
/// add_data_gradient adds and returns what data_potential returns, bit for bit: runs must not
/// depend on whether a model fuses the two (Model::data_potential_and_gradient). Weighted, at
/// every probe point.
CheckOutcome fused_pass_check(const Probe& probe) {
  const std::string name = "fused potential and gradient (data_potential_and_gradient) equal the separate calls, bit for bit";
  if (!probe.capabilities.exact_log_likelihood) return skipped(name, "needs the exact-log-likelihood capability");
  for (std::size_t p = 0; p < probe.points.size(); ++p) {
    const Vector& theta = probe.points[p];
    Vector fused(theta.size(), 0.0);
    Rng rng(12345, 6789);  // probe.gradient's stream
    const auto potential =
        probe.model->data_potential_and_gradient(theta, Batch{probe.items, probe.weights}, fused, *probe.workspace, rng);
    if (!potential) return skipped(name, "the model computes the potential apart (the default)");
    const Vector gradient = probe.gradient(theta, probe.items, probe.weights);
    const double separate = probe.potential(theta, probe.items, probe.weights);
    const auto differs = [](double a, double b) { return std::bit_cast<std::uint64_t>(a) != std::bit_cast<std::uint64_t>(b); };
    if (differs(*potential, separate))
      return compare(name, 2.0, fmt::format("point {}: potential {:.17g} fused, {:.17g} alone", p + 1, *potential, separate));
    for (std::size_t j = 0; j < theta.size(); ++j)
      if (differs(fused[j], gradient[j]))
        return compare(name, 2.0, fmt::format("point {}, coordinate {}: gradient {:.17g} fused, {:.17g} alone", p + 1,
                                              j + 1, fused[j], gradient[j]));
  }
  return compare(name, 0.0, item_list(probe));
}

std::vector<CheckOutcome> batch_checks(const Probe& probe) {
  std::vector<CheckOutcome> outcomes;
  const Vector& theta = probe.points.front();
  const std::string sum_name = "batch gradient equals the sum of single-item gradients";
  const std::string weighted_name = "weighted batch gradient equals the weighted sum of single-item gradients";
  if (probe.capabilities.latent_gibbs_step) {
    outcomes.push_back(skipped(sum_name, "the Gibbs step makes single-item and batch calls draw differently"));
    outcomes.push_back(skipped(weighted_name, "the Gibbs step makes single-item and batch calls draw differently"));
  } else {
    Vector sum(theta.size(), 0.0), weighted_sum(theta.size(), 0.0);
    for (std::size_t k = 0; k < probe.items.size(); ++k) {
      const auto single = probe.gradient(theta, std::span(probe.items).subspan(k, 1));
      for (std::size_t j = 0; j < theta.size(); ++j) {
        sum[j] += single[j];
        weighted_sum[j] += probe.weights[k] * single[j];
      }
    }
    outcomes.push_back(compare(sum_name, worst(probe.gradient(theta, probe.items), sum), item_list(probe)));
    outcomes.push_back(
        compare(weighted_name, worst(probe.gradient(theta, probe.items, probe.weights), weighted_sum), item_list(probe)));
  }
  const std::string potential_name = "batch potential equals the (weighted) sum over its items";
  if (!probe.capabilities.exact_log_likelihood) {
    outcomes.push_back(skipped(potential_name, "needs the exact-log-likelihood capability"));
  } else {
    double sum = 0.0, weighted_sum = 0.0;
    for (std::size_t k = 0; k < probe.items.size(); ++k) {
      const double single = probe.potential(theta, std::span(probe.items).subspan(k, 1));
      sum += single;
      weighted_sum += probe.weights[k] * single;
    }
    const double ratio = std::max(worst({probe.potential(theta, probe.items)}, {sum}),
                                  worst({probe.potential(theta, probe.items, probe.weights)}, {weighted_sum}));
    outcomes.push_back(compare(potential_name, ratio, item_list(probe)));
  }
  outcomes.push_back(fused_pass_check(probe));
  return outcomes;
}


/// Everything a chain reads from a model at θ: the full-data gradient and the metrics.
Vector fingerprint(const Model& model, Workspace& workspace, const Vector& theta) {
  const auto all = every_item(model);
  Vector values(model.dimension(), 0.0);
  Rng rng(5, 5);
  add_gradient(model, theta, all, values, workspace, rng);
  Vector metrics(model.metric_names().size());
  model.evaluate_metrics(theta, workspace, metrics);
  values.insert(values.end(), metrics.begin(), metrics.end());
  return values;
}

bool identical(const Vector& a, const Vector& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t j = 0; j < a.size(); ++j)
    if (!(a[j] == b[j] || (std::isnan(a[j]) && std::isnan(b[j])))) return false;
  return true;
}

/// A chain resumed from a checkpoint continues bit for bit only if the workspace's save_state
/// writes all of its state: a workspace used as a chain uses one (after_step hooks, metric
/// evaluations), saved and restored into a fresh one, must then give what the used one gives.
CheckOutcome workspace_state_check(const Model& model, const std::vector<Vector>& points) {
  auto used = model.make_workspace();
  Rng rng(7, 7);
  for (std::uint64_t iteration = 1; iteration <= 30; ++iteration) {
    Vector theta = points[iteration % points.size()];
    model.after_step(iteration, theta, *used, rng, AllItems(model.num_items()));
    fingerprint(model, *used, theta);
  }
  StateWriter saved;
  used->save_state(saved);
  auto restored = model.make_workspace();
  StateReader in(saved.bytes(), "the saved workspace");
  restored->restore_state(in);
  in.finish();
  const Vector& theta = points.front();
  const bool same = identical(fingerprint(model, *restored, theta), fingerprint(model, *used, theta));
  return {"checkpoints: a workspace restored from a used one's save_state gives the same gradient and metrics",
          same ? CheckOutcome::Status::passed : CheckOutcome::Status::failed,
          same ? fmt::format("{} bytes of state after 30 iterations", saved.bytes().size())
               : "Workspace::save_state/restore_state leave out state that carries across iterations (running "
                 "averages, hyperparameters), so a resumed chain would not continue as it would have"};
}

/// The name a quantity must not take: "" when `name` makes a new CSV column beside the
/// parameters' (recorded with output.quantities), else why not.
std::string column_name_problem(const std::string& name, const std::set<std::string>& taken) {
  if (name.empty()) return "a quantity has an empty name";
  if (taken.contains(name)) return fmt::format("'{}' is already a parameter's or another quantity's name", name);
  if (name.ends_with("__")) return fmt::format("'{}' ends in __, which Stan CSV keeps for the sampler's columns", name);
  if (name.find_first_of(",\"\n\r\t ") != std::string::npos)
    return fmt::format("'{}' holds a comma, quote, space or line break, which a CSV header cannot", name);
  return "";
}

/// Quantities of interest (`quantity_names`, `evaluate_quantities`): new, distinct columns, and
/// finite values that are a function of θ alone (evaluated twice at each probe point, after a
/// fill with NaN so that a slot left unwritten shows). A model with a latent Gibbs step may
/// estimate them by sampling (lda's held-out density draws topic assignments), so for it the
/// two evaluations need not agree.
std::vector<CheckOutcome> quantity_checks(const Probe& probe) {
  const Model& model = *probe.model;
  const auto names = model.quantity_names();
  if (names.empty()) return {skipped("quantities of interest", "the model declares none")};
  const auto parameters = model.parameter_names();
  std::set<std::string> taken(parameters.begin(), parameters.end());
  std::string problem;
  for (const auto& name : names)
    if (problem.empty() && (problem = column_name_problem(name, taken)).empty()) taken.insert(name);
  std::vector<CheckOutcome> outcomes{{"quantity names are new, distinct CSV columns",
                                      problem.empty() ? CheckOutcome::Status::passed : CheckOutcome::Status::failed,
                                      problem.empty() ? fmt::format("{} quantities", names.size()) : problem}};
  problem.clear();
  for (std::size_t k = 0; k < probe.points.size() && problem.empty(); ++k) {
    Vector first(names.size(), std::nan("")), second(names.size(), std::nan(""));
    model.evaluate_quantities(probe.points[k], *probe.workspace, first);
    model.evaluate_quantities(probe.points[k], *probe.workspace, second);
    for (std::size_t j = 0; j < names.size() && problem.empty(); ++j) {
      if (!std::isfinite(first[j]))
        problem = fmt::format("{} = {} at probe point {} (not finite, or not written)", names[j], first[j], k + 1);
      else if (first[j] != second[j] && !probe.capabilities.latent_gibbs_step)
        problem = fmt::format("{} = {}, then {} at the same θ (probe point {}): not a function of θ alone", names[j],
                              first[j], second[j], k + 1);
    }
  }
  const std::string passed = probe.capabilities.latent_gibbs_step
                                 ? fmt::format("finite at {} points (sampled estimates: latent-gibbs-step)", probe.points.size())
                                 : fmt::format("at {} points", probe.points.size());
  outcomes.push_back({"quantities are finite functions of θ", problem.empty() ? CheckOutcome::Status::passed
                                                                              : CheckOutcome::Status::failed,
                      problem.empty() ? passed : problem});
  return outcomes;
}

std::vector<CheckOutcome> reproducibility_checks(const Probe& probe, const ModelBuilder& build, const Settings& settings) {
  std::vector<CheckOutcome> outcomes;
  const Vector& theta = probe.points.front();
  auto first = probe.model->make_workspace();
  const Vector reference = fingerprint(*probe.model, *first, theta);

  const auto again = build(SectionReader(settings), 1);
  auto second = again->make_workspace();
  outcomes.push_back({"same seed, same model: identical gradient and metrics",
                      identical(fingerprint(*again, *second, theta), reference) ? CheckOutcome::Status::passed
                                                                                : CheckOutcome::Status::failed,
                      "built twice with random seed 1"});

  // Four workspaces used at once must give what one gives alone.
  std::vector<Vector> results(4);
  {
    std::vector<std::jthread> threads;
    for (auto& result : results)
      threads.emplace_back([&] {
        auto workspace = probe.model->make_workspace();
        result = fingerprint(*probe.model, *workspace, theta);
      });
  }
  const bool agree = std::all_of(results.begin(), results.end(), [&](const Vector& r) { return identical(r, reference); });
  outcomes.push_back({"thread safety: 4 workspaces in 4 threads agree with one",
                      agree ? CheckOutcome::Status::passed : CheckOutcome::Status::failed, ""});
  outcomes.push_back(workspace_state_check(*probe.model, probe.points));

  if (probe.capabilities.simulation) {
    std::string error;
    try {
      const Settings none("model");
      build(SectionReader(none), 1);
    } catch (const std::exception& failure) {
      error = failure.what();
    }
    outcomes.push_back({"simulation: builds with no data settings", error.empty() ? CheckOutcome::Status::passed
                                                                                  : CheckOutcome::Status::failed,
                        error});
  }
  return outcomes;
}

}  // namespace sgmcmc::model_check_parts

namespace sgmcmc {

using namespace model_check_parts;

std::vector<CheckOutcome> check_model(const ModelBuilder& build, const Settings& settings,
                                      const CheckProgress& progress) {
  std::vector<CheckOutcome> outcomes;
  const auto add = [&](CheckOutcome outcome) {
    progress.on_outcome(outcome);
    outcomes.push_back(std::move(outcome));
  };
  const auto guarded = [&](const std::string& stage, auto&& run) {
    try {
      run();
    } catch (const std::exception& failure) {
      add({stage, CheckOutcome::Status::failed, failure.what()});
    }
  };
  const auto runs = [&](std::size_t stage) {
    if (stage < progress.first_stage) return false;
    progress.on_stage(stage);
    return true;
  };
  // Stage 0 reports its outcome only when it fails; a later process builds the model again silently.
  std::shared_ptr<const Model> model;
  if (progress.first_stage == 0) progress.on_stage(0);
  guarded(check_stages[0], [&] {
    SectionReads reads;
    model = build(SectionReader(settings, reads), 1);
    reject_unknown_keys(settings, reads);
  });
  if (!model) return outcomes;
  const std::size_t d = model->dimension(), names = model->parameter_names().size();
  const bool consistent = names == d && d > 0 && model->num_items() > 0;
  if (runs(1))
    add(compare("dimensions are consistent (parameter names, items)", consistent ? 0.0 : 2.0,
                fmt::format("dimension {}, {} parameter names, {} items", d, names, model->num_items())));
  if (!consistent) return outcomes;

  const Probe probe = make_probe(model);
  const std::function<std::vector<CheckOutcome>(const Probe&)> groups[] = {
      gradient_checks, batch_checks, capability_checks, quantity_checks,
      [&](const Probe& p) { return reproducibility_checks(p, build, settings); }};
  for (std::size_t k = 0; k < std::size(groups); ++k)
    if (runs(2 + k))
      guarded(fmt::format("{} checks raised an error", check_stages[2 + k]), [&] {
        for (auto& outcome : groups[k](probe)) add(std::move(outcome));
      });
  return outcomes;
}

}  // namespace sgmcmc
