// The umbrella module: `import sgmcmc;` gives a plugin, the runner or a test the whole framework.
export module sgmcmc;
export import sgmcmc.error;
export import sgmcmc.random;
export import sgmcmc.settings;
export import sgmcmc.catalogue;
export import sgmcmc.model;
export import sgmcmc.estimators;
export import sgmcmc.integrators;
export import sgmcmc.correctors;
export import sgmcmc.chain;
export import sgmcmc.io;
export import sgmcmc.config;
export import sgmcmc.plugins;
export import sgmcmc.model_checks;
export import sgmcmc.diagnostics;
export import sgmcmc.data;
