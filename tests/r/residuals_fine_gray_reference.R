# Reference numbers from cmprsk::crr for tests/test_residuals_fine_gray.py: crr's
# Schoenfeld-type residuals fit$res (one row per unique failure time of the cause) and its
# sandwich variance fit$var (the sum of the subjects' dfbeta outer products).
#
# Usage: Rscript residuals_fine_gray_reference.R OUTDIR [SEED]
# Writes into OUTDIR:
#   fg_data_pbc.csv: survival::pbc, time, status (0 censored, 1 transplant, 2 death), age,
#     logbili, albumin, edema (all 418 rows);
#   fg_data_sim.csv: a simulated design (SEED, 200 rows): times rounded to tenths (ties,
#     also between causes and censorings), status 0..2, censoring groups cg (1, 2), x1, x2;
#   fg_cases.json: case, dataset, cause, covariates, cengroup (column or "");
#   fg_case_<case>.json: coef, var (fit$var), res (fit$res), uftime (fit$uftime).
# crr runs to gtol = 1e-13, then Newton steps on its own score and information.
suppressPackageStartupMessages({library(survival); library(cmprsk); library(jsonlite)})
args <- commandArgs(trailingOnly = TRUE)
outdir <- args[1]
seed <- if (length(args) >= 2) as.integer(args[2]) else 20261127L
set.seed(seed)
dir.create(outdir, showWarnings = FALSE, recursive = TRUE)

pbc2 <- data.frame(time = pbc$time, status = pbc$status, age = pbc$age,
                   logbili = log(pbc$bili), albumin = pbc$albumin, edema = pbc$edema)
n <- 200
x1 <- rnorm(n); x2 <- rbinom(n, 1, 0.5); cg <- rbinom(n, 1, 0.5) + 1
t1 <- rexp(n, 0.3 * exp(0.5 * x1 - 0.4 * x2)); t2 <- rexp(n, 0.2)
cens <- rexp(n, ifelse(cg == 1, 0.1, 0.3))
time <- round(pmin(t1, t2, cens) + 0.1, 1)
status <- ifelse(cens <= pmin(t1, t2), 0, ifelse(t1 <= t2, 1, 2))
sim <- data.frame(time = time, status = status, cg = cg, x1 = x1, x2 = x2)
write.csv(pbc2, file.path(outdir, "fg_data_pbc.csv"), row.names = FALSE)
write.csv(sim, file.path(outdir, "fg_data_sim.csv"), row.names = FALSE)
datasets <- list(pbc = pbc2, sim = sim)

cases <- list(
  list(case = "pbc_death", dataset = "pbc", cause = 2,
       covariates = c("age", "logbili", "albumin", "edema"), cengroup = ""),
  list(case = "pbc_transplant", dataset = "pbc", cause = 1,
       covariates = c("age", "logbili", "albumin"), cengroup = ""),
  list(case = "sim_cengroup", dataset = "sim", cause = 1, covariates = c("x1", "x2"),
       cengroup = "cg"))

polish <- function(fit, d, cs) {
  # Newton steps on crr's own score and information (crr's line search stops at the
  # loss's rounding level)
  for (it in 1:3) {
    b <- fit$coef
    fit2 <- if (cs$cengroup == "") {
      crr(d$time, d$status, as.matrix(d[, cs$covariates]), failcode = cs$cause,
          cencode = 0, init = b, gtol = 1e-13, maxiter = 0)
    } else {
      crr(d$time, d$status, as.matrix(d[, cs$covariates]), failcode = cs$cause,
          cencode = 0, cengroup = d[[cs$cengroup]], init = b, gtol = 1e-13, maxiter = 0)
    }
    step <- solve(fit2$inf, fit2$score)
    fit <- if (cs$cengroup == "") {
      crr(d$time, d$status, as.matrix(d[, cs$covariates]), failcode = cs$cause,
          cencode = 0, init = b + step, gtol = 1e-13, maxiter = 0)
    } else {
      crr(d$time, d$status, as.matrix(d[, cs$covariates]), failcode = cs$cause,
          cencode = 0, cengroup = d[[cs$cengroup]], init = b + step, gtol = 1e-13,
          maxiter = 0)
    }
    if (max(abs(step) / pmax(abs(b), 1e-8)) < 1e-12) break
  }
  fit
}
mat <- function(r) { r <- as.matrix(r); dimnames(r) <- NULL; r }
for (cs in cases) {
  d <- datasets[[cs$dataset]]
  fit <- if (cs$cengroup == "") {
    crr(d$time, d$status, as.matrix(d[, cs$covariates]), failcode = cs$cause, cencode = 0,
        gtol = 1e-13, maxiter = 100)
  } else {
    crr(d$time, d$status, as.matrix(d[, cs$covariates]), failcode = cs$cause, cencode = 0,
        cengroup = d[[cs$cengroup]], gtol = 1e-13, maxiter = 100)
  }
  fit <- polish(fit, d, cs)
  out <- list(case = cs$case, coef = unname(fit$coef), var = mat(fit$var), res = mat(fit$res),
              uftime = fit$uftime)
  writeLines(toJSON(out, digits = NA, matrix = "rowmajor", auto_unbox = TRUE),
             file.path(outdir, paste0("fg_case_", cs$case, ".json")))
}
writeLines(toJSON(cases, auto_unbox = TRUE, pretty = TRUE), file.path(outdir, "fg_cases.json"))
