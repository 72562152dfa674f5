#!/usr/bin/env Rscript
# Stan NUTS's ESS per CPU second on posteriordb posteriors: the NUTS columns of the SGLD-CV table
# in tests/posteriordb/README.md.
#
#   Rscript runners/posteriordb/nuts_reference.R --posteriordb DIR --out FILE.csv POSTERIOR...
#
# DIR is a posteriordb checkout (the folder holding posterior_database/; tests/posteriordb is one).
# For each posterior: its Stan model compiled once per model, run by rstan on the posterior's data
# (the JSON in its zip) with rstan's defaults (4 chains, 1,000 warmup + 1,000 sampling iterations,
# NUTS with a diagonal mass adapted in Stan's windows), chains one after another on one core,
# seed 1. One CSV row per posterior is appended to FILE as soon as it is done:
#   cpu_seconds     user + system CPU seconds of the sampling() call (warmup and sampling of the
#                   4 chains; the compilation is not counted);
#   stan_warmup_s, stan_sampling_s   the chains' own timers (rstan's get_elapsed_time), summed;
#   min_ess_bulk    the smallest bulk ESS (posterior::ess_bulk, Vehtari et al. 2021) over the
#                   parameters of the model's `parameters` block, and which one;
#   ess_per_cpu_s   min_ess_bulk / cpu_seconds; max_rhat; divergences.
# Needs rstan and posterior (Debian: r-cran-rstan, r-cran-posterior, r-cran-jsonlite). rstan 2.21
# reads Stan's old array syntax only: `array[N] int x;` is rewritten to `int x[N];` first.

suppressPackageStartupMessages({
  library(rstan)
  library(posterior)
  library(jsonlite)
})

usage <- "usage: nuts_reference.R --posteriordb DIR --out FILE.csv POSTERIOR..."

parse_arguments <- function(args) {
  options <- list(posteriordb = NULL, out = NULL, posteriors = character())
  i <- 1
  while (i <= length(args)) {
    if (args[i] %in% c("--posteriordb", "--out") && i < length(args)) {
      options[[sub("^--", "", args[i])]] <- args[i + 1]
      i <- i + 2
    } else {
      options$posteriors <- c(options$posteriors, args[i])
      i <- i + 1
    }
  }
  if (is.null(options$posteriordb) || is.null(options$out) || length(options$posteriors) == 0) {
    message(usage)
    quit(status = 2)
  }
  options
}

database_file <- function(root, ...) {
  path <- file.path(root, "posterior_database", ...)
  if (!file.exists(path)) {
    message(sprintf("nuts_reference.R: %s: no such file (is %s a posteriordb checkout?)", path, root))
    quit(status = 2)
  }
  path
}

read_zipped_json <- function(path) {
  inside <- unzip(path, list = TRUE)$Name
  if (length(inside) != 1) stop(sprintf("%s: expected one JSON file in the zip, found %d", path, length(inside)))
  connection <- unz(path, inside)
  on.exit(close(connection))
  fromJSON(paste(readLines(connection, warn = FALSE), collapse = "\n"))
}

# Stan 2.26's `array[dims] type name;` as rstan 2.21's `type name[dims];`.
old_array_syntax <- function(code) {
  gsub("array\\[([^]]+)\\]\\s+([A-Za-z_]+(<[^>]*>)?)\\s+([A-Za-z_][A-Za-z0-9_]*)\\s*;", "\\2 \\4[\\1];", code, perl = TRUE)
}

compiled <- new.env()
compiled_model <- function(root, model_name) {
  if (is.null(compiled[[model_name]])) {
    code <- old_array_syntax(paste(readLines(database_file(root, "models", "stan", paste0(model_name, ".stan"))),
                                   collapse = "\n"))
    compiled[[model_name]] <- stan_model(model_code = code, model_name = model_name)
  }
  compiled[[model_name]]
}

cpu_seconds_of <- function(expression) {
  before <- proc.time()
  value <- force(expression)
  spent <- proc.time() - before
  list(value = value, cpu = unname(spent[["user.self"]] + spent[["sys.self"]]))
}

measure <- function(root, posterior) {
  info <- fromJSON(database_file(root, "posteriors", paste0(posterior, ".json")))
  data <- read_zipped_json(database_file(root, "data", "data", paste0(info$data_name, ".json.zip")))
  model <- compiled_model(root, info$model_name)
  run <- cpu_seconds_of(sampling(model, data = data, chains = 4, cores = 1, seed = 1, refresh = 0))
  fit <- run$value
  draws <- as_draws_array(as.array(fit))
  declared <- names(get_inits(fit)[[1]])  # the parameters block's names: no lp__, no generated quantities
  draws <- subset_draws(draws, variable = variables(draws)[sub("\\[.*$", "", variables(draws)) %in% declared])
  summary <- summarise_draws(draws, ess_bulk, rhat)
  ess <- as.numeric(summary$ess_bulk)
  elapsed <- get_elapsed_time(fit)
  weakest <- which.min(ess)
  divergences <- sum(sapply(get_sampler_params(fit, inc_warmup = FALSE), function(chain) sum(chain[, "divergent__"])))
  data.frame(posterior = posterior, model = info$model_name, rows = if (is.null(data$N)) NA else data$N,
             cpu_seconds = signif(run$cpu, 4),
             stan_warmup_s = signif(sum(elapsed[, "warmup"]), 4), stan_sampling_s = signif(sum(elapsed[, "sample"]), 4),
             min_ess_bulk = round(ess[weakest]), min_ess_parameter = as.character(summary$variable[weakest]),
             ess_per_cpu_s = signif(ess[weakest] / run$cpu, 4),
             max_rhat = signif(max(as.numeric(summary$rhat)), 4), divergences = divergences)
}

main <- function() {
  options <- parse_arguments(commandArgs(trailingOnly = TRUE))
  for (posterior in options$posteriors) {
    row <- measure(options$posteriordb, posterior)
    print(row, row.names = FALSE)
    write.table(row, options$out, sep = ",", row.names = FALSE, quote = FALSE,
                append = file.exists(options$out), col.names = !file.exists(options$out))
  }
}

main()
