// The plugin SDK: `import sgmcmc.sdk;` gives a model plugin what it needs and nothing of the
// sampler, so editing an integrator, an estimator or the chain recompiles no plugin
// (modules/README.md, "What rebuilds what"): the model interface (sgmcmc.model), data helpers for
// plugins (sgmcmc.data: splits, subsamples, predictive averages, memory budgets), reading data
// files (sgmcmc.io: numeric CSV, text lines), settings and errors, random streams and checkpoint
// state. The runner and the tests import the whole framework, `import sgmcmc;`.
export module sgmcmc.sdk;
export import sgmcmc.error;
export import sgmcmc.state;
export import sgmcmc.random;
export import sgmcmc.settings;
export import sgmcmc.model;
export import sgmcmc.data;
export import sgmcmc.io;
