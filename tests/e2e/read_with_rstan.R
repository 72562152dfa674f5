# Reads sgmcmc runs with the R tools Stan users have (rstan, posterior, bayesplot), for
# tests/e2e/r_interop_test.cpp:
#
#   Rscript read_with_rstan.R OUT RUN...
#
# For each run folder RUN it reads chain-<k>.csv with rstan::read_stan_csv (a warning is an
# error: a file rstan half-understands is not accepted), converts the fit to posterior's draws,
# draws bayesplot's trace plot of the first model parameter, from the whole array, to OUT/<run>-trace.png, and writes
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
  # Every warning is an error: lp__ is finite in every file (0, with a comment line saying it was
  # not computed, unless the run set run.lp = true), as rstan's readers need.
  fit <- withCallingHandlers(read_stan_csv(files), warning = function(w) {
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

  # The call a Stan user makes on the whole array (bayesplot refuses an array holding any NaN),
  # selecting the first model parameter (not lp__ or a sampler column such as accepted__) by regex.
  columns <- dimnames(draws)[[3]]
  first <- columns[!grepl("__$", columns)][1]
  plot <- mcmc_trace(draws, regex_pars = paste0("^", gsub("([][.])", "\\\\\\1", first, perl = TRUE), "$"))
  ggplot2::ggsave(file.path(out, paste0(name, "-trace.png")), plot, width = 6, height = 3, dpi = 50)
}
