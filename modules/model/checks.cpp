// The model checks' definitions (their interface, sgmcmc.model_checks, is modules/model/checks.cppm).
// declared capabilities, quantities of interest, reproducibility and thread safety.
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

namespace sgmcmc {

namespace {

using Vector = std::vector<double>;
constexpr double epsilon = std::numeric_limits<double>::epsilon();

/// What the checks share: the model, random points, a batch with weights.
struct Probe {
  std::shared_ptr<const Model> model;
  Capabilities capabilities;
  std::unique_ptr<Workspace> workspace;
  std::vector<Vector> points;
  std::vector<std::size_t> items;
  Vector weights;

  /// Σ_k w_k ∇f_{items[k]}(θ), drawing (for a Gibbs step) from a fixed stream, so that calls
  /// are comparable.
  Vector gradient(const Vector& theta, std::span<const std::size_t> batch, std::span<const double> w = {}) const {
    Vector g(theta.size(), 0.0);
    Rng rng(12345, 6789);
    model->add_data_gradient(theta, Batch{batch, w}, g, *workspace, rng);
    return g;
  }
  double potential(const Vector& theta, std::span<const std::size_t> batch, std::span<const double> w = {}) const {
    return model->data_potential(theta, Batch{batch, w}, *workspace);
  }
};

/// Largest relative difference between two vectors; 1 means "at the tolerance".
double worst(const Vector& a, const Vector& b, double relative = 1e-9) {
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

/// The float chain's gradient (Model::scaled_gradient_float, capability float-gradient) at each
/// probe point rounded to float, against the double interface at the same point: scale ·
/// Σ_k ∇f_{items[k]} + ∇f_0 with scale 3 (a minibatch's N/n). Relative tolerance 1e-4: a batch
/// summed in float rounds at ~1e-7 per term, while a wrong scale, a missing prior term or a sign
/// is off by O(1). Every coordinate must be overwritten (the output starts as NaN).
CheckOutcome float_gradient_check(const Probe& probe) {
  const std::string name = "float gradient (scaled_gradient_float) equals scale × the batch gradient + the prior's, to 1e-4";
  if (!probe.capabilities.float_gradient) return skipped(name, "not declared");
  constexpr double scale = 3.0;
  double ratio = 0.0;
  std::string detail = item_list(probe);
  for (std::size_t p = 0; p < probe.points.size(); ++p) {
    const std::vector<float> theta_float(probe.points[p].begin(), probe.points[p].end());
    const Vector theta(theta_float.begin(), theta_float.end());
    Vector expected = probe.gradient(theta, probe.items);
    for (double& g : expected) g *= scale;
    probe.model->add_prior_gradient_given(theta, expected, *probe.workspace);
    std::vector<float> got(theta.size(), std::numeric_limits<float>::quiet_NaN());
    probe.model->scaled_gradient_float(theta_float, probe.items, scale, got, *probe.workspace);
    if (!std::all_of(got.begin(), got.end(), [](float g) { return std::isfinite(g); }))
      return compare(name, INFINITY, fmt::format("point {}: a coordinate left unset or not finite", p + 1));
    const double here = worst(expected, Vector(got.begin(), got.end()), 1e-4);
    if (here > ratio) ratio = here, detail = fmt::format("point {}, {}", p + 1, item_list(probe));
  }
  return compare(name, ratio, detail);
}

std::vector<CheckOutcome> capability_checks(const Probe& probe) {
  std::vector<CheckOutcome> outcomes;
  const auto& model = *probe.model;
  const Vector& theta = probe.points.front();
  const std::size_t d = theta.size(), n = probe.items.size();
  Vector batch = probe.gradient(theta, probe.items);

  const std::string per_item = "per-item gradients (item_gradients) equal single-item batches";
  if (!probe.capabilities.per_item_gradients) {
    outcomes.push_back(skipped(per_item, "not declared"));
  } else {
    Vector rows(n * d);
    model.item_gradients(theta, probe.items, rows, *probe.workspace);
    double ratio = 0.0;
    for (std::size_t k = 0; k < n; ++k)
      ratio = std::max(ratio, worst(Vector(rows.begin() + static_cast<std::ptrdiff_t>(k * d), rows.begin() + static_cast<std::ptrdiff_t>((k + 1) * d)),
                                    probe.gradient(theta, std::span(probe.items).subspan(k, 1))));
    outcomes.push_back(compare(per_item, ratio, item_list(probe)));
  }

  const std::string sparse = "sparse item gradients, scattered onto their supports, equal single-item batches";
  if (!probe.capabilities.sparse_item_gradients) {
    outcomes.push_back(skipped(sparse, "not declared"));
  } else {
    const std::size_t s = model.item_gradient_support_size();
    std::vector<std::size_t> support(n * s);
    Vector values(n * s);
    model.item_gradient_support(probe.items, support);
    model.sparse_item_gradients(theta, probe.items, values, *probe.workspace);
    double ratio = 0.0;
    for (std::size_t k = 0; k < n; ++k) {
      Vector scattered(d, 0.0);
      for (std::size_t j = 0; j < s; ++j) {
        if (support[k * s + j] >= d) {
          ratio = INFINITY;  // a support outside θ
          continue;
        }
        scattered[support[k * s + j]] += values[k * s + j];
      }
      ratio = std::max(ratio, worst(scattered, probe.gradient(theta, std::span(probe.items).subspan(k, 1))));
    }
    outcomes.push_back(compare(sparse, ratio, item_list(probe)));
  }

  const std::string glm = "GLM form s_i·x_i reproduces the batch gradient";
  if (!probe.capabilities.glm_gradients) {
    outcomes.push_back(skipped(glm, "not declared"));
  } else {
    Vector scalars(n), from_glm(d, 0.0);
    model.glm_scalars(theta, probe.items, scalars, *probe.workspace);
    model.add_scaled_features(probe.items, scalars, from_glm);
    outcomes.push_back(compare(glm, worst(from_glm, batch), item_list(probe)));
  }

  const std::string lipschitz = "Lipschitz bounds: ‖∇f_i(θ) - ∇f_i(θ')‖ ≤ L_i‖θ - θ'‖ between the random points";
  if (!probe.capabilities.lipschitz_bounds) {
    outcomes.push_back(skipped(lipschitz, "not declared"));
  } else {
    Vector bounds(model.num_items());
    model.item_lipschitz_bounds(bounds);
    double ratio = 0.0;  // observed slope / L_i, at most 1 (up to rounding) when the bounds hold
    std::string detail;
    for (std::size_t k = 0; k < n; ++k) {
      const auto item = std::span(probe.items).subspan(k, 1);
      for (std::size_t a = 0; a < probe.points.size(); ++a)
        for (std::size_t b = a + 1; b < probe.points.size(); ++b) {
          const Vector ga = probe.gradient(probe.points[a], item), gb = probe.gradient(probe.points[b], item);
          double gradient_change = 0.0, step = 0.0;
          for (std::size_t j = 0; j < d; ++j) {
            gradient_change += (ga[j] - gb[j]) * (ga[j] - gb[j]);
            step += (probe.points[a][j] - probe.points[b][j]) * (probe.points[a][j] - probe.points[b][j]);
          }
          const double slope = std::sqrt(gradient_change / step), bound = bounds[item[0]];
          const double r = bound >= 0.0 && std::isfinite(bound) ? slope / (bound * (1 + 1e-9) + 1e-300) : INFINITY;
          if (r > ratio) {
            ratio = r;
            detail = fmt::format("item {}: slope {:.6g}, L_i {:.6g}", item[0], slope, bound);
          }
        }
    }
    outcomes.push_back(compare(lipschitz, ratio, detail));
  }

  // A model without a Gibbs step must not draw from the stream; one with it must draw only
  // from it (same stream, same gradient).
  Vector other(d, 0.0);
  Rng different(999, 1);
  model.add_data_gradient(theta, Batch{probe.items}, other, *probe.workspace, different);
  if (probe.capabilities.latent_gibbs_step)
    outcomes.push_back(compare("Gibbs step: the same stream gives the same gradient",
                               worst(probe.gradient(theta, probe.items), batch), "two calls from one stream state"));
  else
    outcomes.push_back(compare("the gradient does not depend on the random stream (no latent-gibbs-step declared)",
                               worst(other, batch), "two calls from different streams"));

  if (probe.capabilities.positive_parameters) {
    Vector start(d);
    Rng rng(1, 1);
    model.initial_point(start, rng);
    const bool positive = std::all_of(start.begin(), start.end(), [](double x) { return x > 0.0; });
    outcomes.push_back({"positive parameters: the initial point is positive",
                        positive ? CheckOutcome::Status::passed : CheckOutcome::Status::failed, ""});
  }
  outcomes.push_back(float_gradient_check(probe));
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
    model.after_step(iteration, theta, *used, rng);
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

  const auto again = build(settings, 1);
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
      build(Settings("model"), 1);
    } catch (const std::exception& failure) {
      error = failure.what();
    }
    outcomes.push_back({"simulation: builds with no data settings", error.empty() ? CheckOutcome::Status::passed
                                                                                  : CheckOutcome::Status::failed,
                        error});
  }
  return outcomes;
}

}  // namespace

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
    model = build(settings, 1);
    settings.reject_unknown_keys();
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
