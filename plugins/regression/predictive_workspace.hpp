// A regression chain's workspace: the running posterior-predictive average of the test set
// (the log_predictive_density metric), and scratch for one draw's held-out log-likelihoods.
#pragma once
#include <cstddef>
#include <vector>

import sgmcmc.sdk;

namespace regression {

struct PredictiveWorkspace final : sgmcmc::Workspace {
  explicit PredictiveWorkspace(std::size_t test_rows) : predictive(test_rows), log_likelihoods(test_rows) {}
  sgmcmc::PredictiveAverage predictive;
  std::vector<double> log_likelihoods;  // scratch: not state
  void save_state(sgmcmc::StateWriter& out) const override { predictive.save_state(out); }
  void restore_state(sgmcmc::StateReader& in) override { predictive.restore_state(in); }
  void restart_averages() override { predictive.restart(); }
};

}  // namespace regression
