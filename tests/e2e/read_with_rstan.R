# Reads sgmcmc runs with the R tools Stan users have (rstan, posterior, bayesplot), for
# tests/e2e/r_interop_test.cpp:
#
#   Rscript read_with_rstan.R OUT RUN...
#
# For each run folder RUN it reads chain-<k>.csv with rstan::read_stan_csv (a warning is an
# error, but for an lp__ that was not computed: a file rstan half-understands is not accepted), converts the fit to posterior's draws,
# draws bayesplot's trace plot of the first two model parameters to OUT/<run>-trace.png, and writes
# OUT/<run>-draws.tsv (chain, draw, then every column as rstan read it, 17 significant digits, so
# the test can compare the numbers with the files; tab-separated, as rstan's names hold commas:
# U[1,2]) and OUT/<run>-fit.tsv (what rstan and posterior
# say of the fit: chains, draws per chain, warmup, thin, and the elapsed times of each chain).
suppressPackageStartupMessages({
  library(rstan)
  library(posterior)
  library(bayesplot)
})

args <- commandArgs(trailingOnly = TRUE)
out <- args[1]
runs <- args[-1]

for (run in runs) {
  files <- list.files(run, pattern = "^chain-[0-9]+\\.csv$", full.names = TRUE)
  files <- files[order(as.integer(gsub("\\D", "", basename(files))))]
  # lp__ is NaN unless the run set run.lp = true (a full data pass per draw; lda cannot): rstan
  # then warns that lp__ is undefined, which is true and expected. Any other warning is an error.
  lp_undefined <- "The following variables have undefined values:  lp__\\."
  fit <- withCallingHandlers(read_stan_csv(files), warning = function(w) {
    if (grepl(lp_undefined, conditionMessage(w))) invokeRestart("muffleWarning")
    stop("rstan::read_stan_csv warned: ", conditionMessage(w))
  })
  draws <- as.array(fit)  # iterations × chains × columns, lp__ last
  name <- basename(run)

  rows <- list()
  for (chain in seq_len(dim(draws)[2])) {
    values <- matrix(sprintf("%.17g", draws[, chain, ]), nrow = dim(draws)[1])
    colnames(values) <- dimnames(draws)[[3]]
    rows[[chain]] <- cbind(chain = chain, draw = seq_len(dim(draws)[1]), values)
  }
  write.table(do.call(rbind, rows), file.path(out, paste0(name, "-draws.tsv")), sep = "\t", row.names = FALSE,
              quote = FALSE)

  posterior_draws <- as_draws(fit)
  times <- get_elapsed_time(fit)
  facts <- data.frame(
    chains = nchains(posterior_draws),
    draws_per_chain = niterations(posterior_draws),
    variables = length(variables(posterior_draws)),
    warmup = fit@sim$warmup,
    thin = fit@sim$thin,
    warmup_seconds = sprintf("%.6f", times[, "warmup"]),
    sampling_seconds = sprintf("%.6f", times[, "sample"]))
  write.table(facts, file.path(out, paste0(name, "-fit.tsv")), sep = "\t", row.names = FALSE, quote = FALSE)

  # The first two model parameters (not lp__ and sampler columns such as accepted__); bayesplot
  # refuses an array with any NaN, so it gets only the two it draws.
  columns <- dimnames(draws)[[3]]
  pars <- head(columns[!grepl("__$", columns)], 2)
  plot <- mcmc_trace(draws[, , pars, drop = FALSE])
  ggplot2::ggsave(file.path(out, paste0(name, "-trace.png")), plot, width = 6, height = 3, dpi = 50)
}
