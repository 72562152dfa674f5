// Reading configurations in tests as a run reads them: the record of the keys read belongs to the
// caller (sgmcmc.settings), and these helpers own one for a test that does not look at it.
// Include after the standard headers the test uses (this header imports sgmcmc).
#pragma once
#include <cstdint>
#include <memory>

import sgmcmc;

namespace test {

/// plan_chain on a whole configuration; the reads are discarded.
inline sgmcmc::ChainPlan plan_chain(const sgmcmc::RunConfig& config, const sgmcmc::Model& model) {
  sgmcmc::ConfigReads reads;
  return sgmcmc::plan_chain({config, reads}, model);
}

/// plan_chain, then the unknown-key check of every section, as a run makes it; `reads` holds what
/// was read before (the model's section, when the test built the model from the same configuration).
inline sgmcmc::ChainPlan checked_plan(const sgmcmc::RunConfig& config, const sgmcmc::Model& model,
                                      sgmcmc::ConfigReads reads = {}) {
  auto plan = sgmcmc::plan_chain({config, reads}, model);
  for (const auto& [name, section] : config.sections) sgmcmc::reject_unknown_keys(section, reads[name]);
  return plan;
}

/// The model `plugin` builds from `section`, every key of which it must read (the unknown-key
/// check a run makes).
inline std::shared_ptr<const sgmcmc::Model> checked_model(const sgmcmc::LoadedPlugin& plugin, const sgmcmc::Settings& section,
                                                          std::uint64_t seed) {
  sgmcmc::SectionReads reads;
  std::shared_ptr<const sgmcmc::Model> model = plugin.create({sgmcmc::SectionReader(section, reads), seed});
  sgmcmc::reject_unknown_keys(section, reads);
  return model;
}

}  // namespace test
