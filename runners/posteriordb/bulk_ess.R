#!/usr/bin/env Rscript
# The smallest bulk ESS (posterior::ess_bulk, Vehtari et al. 2021) over the parameters of sgmcmc
# runs, the estimator nuts_reference.R reports for Stan's NUTS, so that the two columns of the
# SGLD-CV table in tests/posteriordb/README.md measure the same thing.
#
#   Rscript runners/posteriordb/bulk_ess.R RUN...
#
# Prints one CSV row per run folder: run, min_ess_bulk, min_ess_parameter, cpu_seconds (the
# chains' own, from manifest.json), ess_per_cpu_s. Columns of chain-<k>.csv ending in `__` (lp__,
# accept_stat__, ...) are not parameters. Bulk ESS is rank-based, so log σ's equals σ's.
suppressPackageStartupMessages({
  library(posterior)
  library(jsonlite)
})

chain_table <- function(file) read.csv(file, comment.char = "#", check.names = FALSE)

bulk_ess_row <- function(run) {
  files <- list.files(run, pattern = "^chain-[0-9]+\\.csv$", full.names = TRUE)
  if (length(files) == 0) stop(sprintf("%s: no chain-<k>.csv (expected a folder `sgmcmc run` wrote)", run))
  chains <- lapply(files, chain_table)
  parameters <- grep("__$", names(chains[[1]]), value = TRUE, invert = TRUE)
  ess <- sapply(parameters, function(p) ess_bulk(sapply(chains, function(chain) chain[[p]])))
  weakest <- which.min(ess)
  cpu <- sum(sapply(fromJSON(file.path(run, "manifest.json"))$chains$cpu_seconds, as.numeric))
  data.frame(run = run, min_ess_bulk = round(ess[weakest]), min_ess_parameter = parameters[weakest],
             cpu_seconds = signif(cpu, 4), ess_per_cpu_s = signif(ess[weakest] / cpu, 4))
}

runs <- commandArgs(trailingOnly = TRUE)
if (length(runs) == 0) {
  message("usage: bulk_ess.R RUN...")
  quit(status = 2)
}
write.csv(do.call(rbind, lapply(runs, bulk_ess_row)), stdout(), row.names = FALSE, quote = FALSE)
