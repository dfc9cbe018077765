# Reference numbers from R's residuals.survreg (survival package) for
# tests/test_residuals_aft.py.
#
# Usage: Rscript residuals_aft_reference.R OUTDIR [SEED]
# Writes into OUTDIR:
#   aft_data_lung.csv: R's lung (NA rows of the columns used dropped, status - 1) with case
#     weights w (seeded, 3 decimals);
#   aft_data_interval.csv: a simulated design (SEED) with exact, right-, left- and
#     interval-censored rows: lower (NA: left-censored), upper (NA: right-censored),
#     lower == upper exact;
#   aft_cases.json: case, dataset, dist, covariates, weights (bool), strata (column or "");
#   aft_case_<case>.json.gz (gzip): coef (coefficients then log(scale) unless exponential),
#     residuals (every type of residuals.survreg, per row, weighted = FALSE), weighted
#     (dfbeta and working with weighted = TRUE, weighted cases), collapsed (dfbeta summed
#     per inst with collapse =, lung cases), kind (0 right, 1 exact, 2 left, 3 interval).
# Every fit converges to rel.tolerance 1e-13.
suppressPackageStartupMessages({library(survival); library(jsonlite)})
args <- commandArgs(trailingOnly = TRUE)
outdir <- args[1]
seed <- if (length(args) >= 2) as.integer(args[2]) else 20261127L
set.seed(seed)
dir.create(outdir, showWarnings = FALSE, recursive = TRUE)
ctl <- survreg.control(rel.tolerance = 1e-13, toler.chol = 1e-15, maxiter = 200)

lung2 <- na.omit(lung[, c("inst", "time", "status", "age", "sex", "ph.ecog")])
lung2$status <- lung2$status - 1
lung2$w <- round(runif(nrow(lung2), 0.5, 2.5), 3)
rownames(lung2) <- NULL
n <- 150
x1 <- rnorm(n); x2 <- rbinom(n, 1, 0.5)
tt <- exp(1 + 0.5 * x1 - 0.3 * x2 + 0.6 * log(rexp(n)))
visit <- cumsum(c(0, rep(0.6, 12)))
lower <- upper <- rep(NA_real_, n)
for (i in seq_len(n)) {
  u <- runif(1)
  if (u < 0.2) { lower[i] <- upper[i] <- tt[i] }                    # exact
  else if (u < 0.35) { lower[i] <- tt[i] * runif(1, 0.3, 1) }       # right-censored
  else {
    k <- findInterval(tt[i], visit * runif(1, 0.8, 1.2))
    lo <- if (k >= 1) visit[k] else 0
    hi <- if (k < length(visit)) visit[k + 1] else NA
    if (lo == 0) { upper[i] <- hi }                                 # left-censored
    else { lower[i] <- lo; upper[i] <- hi }                        # interval / right
  }
}
sim <- data.frame(lower = lower, upper = upper, x1 = x1, x2 = x2,
                  w = round(runif(n, 0.5, 2.5), 3))
write.csv(lung2, file.path(outdir, "aft_data_lung.csv"), row.names = FALSE)
write.csv(sim, file.path(outdir, "aft_data_interval.csv"), row.names = FALSE)
datasets <- list(lung = lung2, interval = sim)

cases <- list()
add <- function(case, dataset, dist, covariates, weights = FALSE, strata = "") {
  cases[[length(cases) + 1]] <<- list(case = case, dataset = dataset, dist = dist,
                                      covariates = covariates, weights = weights,
                                      strata = strata)
}
lc <- c("age", "sex", "ph.ecog")
add("lung_weibull", "lung", "weibull", lc)
add("lung_exponential", "lung", "exponential", lc)
add("lung_lognormal_w", "lung", "lognormal", lc, weights = TRUE)
add("lung_loglogistic_strata", "lung", "loglogistic", c("age", "ph.ecog"), strata = "sex")
add("lung_weibull_w_strata", "lung", "weibull", c("age", "ph.ecog"), weights = TRUE,
    strata = "sex")
for (dist in c("weibull", "lognormal", "loglogistic"))
  add(paste0("interval_", dist), "interval", dist, c("x1", "x2"))

types <- c("response", "deviance", "working", "dfbeta", "dfbetas", "ldcase", "ldresp",
           "ldshape")
mat <- function(r) { r <- as.matrix(r); dimnames(r) <- NULL; r }
for (cs in cases) {
  d <- datasets[[cs$dataset]]
  d$wt <- if (cs$weights) d$w else rep(1, nrow(d))
  lhs <- if (cs$dataset == "interval") "Surv(lower, upper, type = 'interval2')"
         else "Surv(time, status)"
  rhs <- paste(cs$covariates, collapse = " + ")
  if (cs$strata != "") rhs <- paste0(rhs, " + strata(", cs$strata, ")")
  fit <- survreg(as.formula(paste(lhs, "~", rhs)), data = d, weights = wt, dist = cs$dist,
                 control = ctl)
  co <- if (cs$dist == "exponential") coef(fit) else c(coef(fit), log(fit$scale))
  y <- fit$y
  out <- list(case = cs$case, coef = unname(co), residuals = list(), weighted = list(),
              collapsed = list(), kind = unname(y[, ncol(y)]))
  for (tp in types) out$residuals[[tp]] <- mat(residuals(fit, type = tp))
  if (cs$weights)
    for (tp in c("dfbeta", "working"))
      out$weighted[[tp]] <- mat(residuals(fit, type = tp, weighted = TRUE))
  if (cs$dataset == "lung") {
    out$collapsed$dfbeta <- mat(residuals(fit, type = "dfbeta", collapse = d$inst))
    out$collapsed_labels <- sort(unique(d$inst))
  }
  con <- gzfile(file.path(outdir, paste0("aft_case_", cs$case, ".json.gz")), "w")
  writeLines(toJSON(out, digits = NA, matrix = "rowmajor", auto_unbox = TRUE, na = "null"), con)
  close(con)
}
writeLines(toJSON(cases, auto_unbox = TRUE, pretty = TRUE), file.path(outdir, "aft_cases.json"))
