// A model wrapper for comparing the fused full pass at an MH block's end with the two passes it
// replaced (Model::data_potential_and_gradient): tests check that both give the same draws, the
// mlp benchmark times both in one run.
#pragma once
#include <memory>
#include <span>
#include <string>
#include <vector>

import sgmcmc;

namespace test {

/// The model it wraps with the fused data pass left out: data_potential_and_gradient is then the
/// Model default, the two separate calls (a gradient pass, then a potential pass).
class TwoPasses final : public sgmcmc::Model {
public:
  explicit TwoPasses(std::shared_ptr<const sgmcmc::Model> model) : model_(std::move(model)) {}
  std::size_t dimension() const override { return model_->dimension(); }
  std::size_t num_items() const override { return model_->num_items(); }
  std::vector<std::string> parameter_names() const override { return model_->parameter_names(); }
  sgmcmc::Capabilities capabilities() const override { return model_->capabilities(); }
  std::unique_ptr<sgmcmc::Workspace> make_workspace() const override { return model_->make_workspace(); }
  void initial_point(std::span<double> theta, sgmcmc::Rng& rng) const override { model_->initial_point(theta, rng); }
  double prior_potential(std::span<const double> theta) const override { return model_->prior_potential(theta); }
  void add_prior_gradient(std::span<const double> theta, std::span<double> gradient) const override {
    model_->add_prior_gradient(theta, gradient);
  }
  double prior_potential_given(std::span<const double> theta, sgmcmc::Workspace& workspace) const override {
    return model_->prior_potential_given(theta, workspace);
  }
  void add_prior_gradient_given(std::span<const double> theta, std::span<double> gradient,
                                sgmcmc::Workspace& workspace) const override {
    model_->add_prior_gradient_given(theta, gradient, workspace);
  }
  void add_data_gradient(std::span<const double> theta, const sgmcmc::Batch& batch, std::span<double> gradient,
                         sgmcmc::Workspace& workspace, sgmcmc::Rng& rng) const override {
    model_->add_data_gradient(theta, batch, gradient, workspace, rng);
  }
  double data_potential(std::span<const double> theta, const sgmcmc::Batch& batch,
                        sgmcmc::Workspace& workspace) const override {
    return model_->data_potential(theta, batch, workspace);
  }

private:
  std::shared_ptr<const sgmcmc::Model> model_;
};

}  // namespace test
