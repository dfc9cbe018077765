# Reference numbers from R's survreg for the AFT new-patient targets (tests/test_aft_targets.py):
# survival probabilities S(t | x) and quantiles of the survival time.
#
# Usage: Rscript aft_targets_reference.R DATADIR OUTDIR [SEED]
# Reads the AFT fixtures' data and cases (DATADIR: tests/fixtures/r_aft, written by
# aft_reference.R; the cases with clusters are left out: a cluster does not change a new
# patient's prediction) and writes into OUTDIR:
#   reference.csv, long format case, quantity, row, col, value. Quantities:
#     new_rows: 0-based rows of the data file whose covariates (and stratum) are the new
#       patients;
#     p (0.1, 0.5, 0.9) and quantile: predict(fit, newdata, type = "quantile", p = p)
#       (patients x p), exp(x'b + sigma w_p) (qsurvreg), and quantile_se, predict's
#       se.fit of it (the delta method with vcov(fit): sqrt(diag(J V J')));
#     times (the quartiles of the observed times) and survival: 1 - psurvreg(t,
#       predict(fit, newdata, type = "lp"), sigma of the patient's stratum, dist)
#       (patients x times);
#     loo_rows (0-based rows), loo_quantile and loo_survival: the same of survreg refitted
#       without each of them (one row per deleted row, patients x p or times flattened
#       patient-major).
# Every fit converges to rel.tolerance 1e-13 (aft_reference.R's control).
suppressPackageStartupMessages(library(survival))
args <- commandArgs(trailingOnly = TRUE)
datadir <- args[1]
outdir <- args[2]
seed <- if (length(args) >= 3) as.integer(args[3]) else 20260126L
set.seed(seed)
dir.create(outdir, showWarnings = FALSE, recursive = TRUE)
ctl <- survreg.control(rel.tolerance = 1e-13, toler.chol = 1e-15, maxiter = 200)

cases <- read.csv(file.path(datadir, "cases.csv"), stringsAsFactors = FALSE)
for (col in c("strata", "cluster")) cases[[col]][is.na(cases[[col]])] <- ""
cases <- cases[cases$cluster == "", ]
datasets <- list()
for (ds in unique(cases$dataset))
  datasets[[ds]] <- read.csv(file.path(datadir, paste0("data_", ds, ".csv")))

# the long-format writer (emit) is aft_reference.R's: its definition is read from it
here <- dirname(normalizePath(sub("^--file=", "",
                                  grep("^--file=", commandArgs(FALSE), value = TRUE)[1])))
for (e in parse(file.path(here, "aft_reference.R")))
  if (is.call(e) && identical(e[[1]], as.name("<-")) && is.name(e[[2]]) &&
      as.character(e[[2]]) == "emit") eval(e)
rows <- list()
probs <- c(0.1, 0.5, 0.9)
# quantiles (patients x p) and survival probabilities (patients x times) of newdata
predictions <- function(fit, cs, newdata, times) {
  pq <- predict(fit, newdata, type = "quantile", p = probs, se.fit = TRUE)
  q <- matrix(pq$fit, ncol = length(probs))
  lp <- predict(fit, newdata, type = "lp")
  sigma <- if (cs$strata == "") rep(fit$scale, nrow(newdata))
           else fit$scale[paste0(cs$strata, "=", newdata[[cs$strata]])]
  s <- sapply(times, function(t) 1 - psurvreg(t, lp, sigma, cs$dist))
  list(quantile = q, survival = matrix(s, ncol = length(times)),
       quantile_se = matrix(pq$se.fit, ncol = length(probs)))
}

for (k in seq_len(nrow(cases))) {
  cs <- cases[k, ]
  d <- datasets[[cs$dataset]]
  d$wt <- if (cs$weights) d$w else rep(1, nrow(d))
  lhs <- if (cs$dataset == "interval") "Surv(lower, upper, type = 'interval2')"
         else "Surv(time, status)"
  rhs <- gsub("+", " + ", cs$covariates, fixed = TRUE)
  if (cs$strata != "") rhs <- paste0(rhs, " + strata(", cs$strata, ")")
  f <- as.formula(paste(lhs, "~", rhs))
  fitit <- function(dd) survreg(f, data = dd, weights = wt, dist = cs$dist, control = ctl,
                                  model = TRUE)
  fit <- fitit(d)
  new_rows <- sort(sample(nrow(d), 3))
  newdata <- d[new_rows, ]
  observed <- if (cs$dataset == "interval") c(d$lower, d$upper) else d$time
  observed <- observed[is.finite(observed) & observed > 0]
  times <- quantile(observed, c(0.25, 0.5, 0.75), type = 1, names = FALSE)
  pr <- predictions(fit, cs, newdata, times)
  emit(cs$case, "new_rows", matrix(new_rows - 1, nrow = 1))
  emit(cs$case, "p", matrix(probs, nrow = 1))
  emit(cs$case, "quantile", pr$quantile)
  emit(cs$case, "quantile_se", pr$quantile_se)
  emit(cs$case, "times", matrix(times, nrow = 1))
  emit(cs$case, "survival", pr$survival)
  loo <- sort(sample(nrow(d), 4))
  emit(cs$case, "loo_rows", matrix(loo - 1, nrow = 1))
  refits <- lapply(loo, function(i) predictions(fitit(d[-i, ]), cs, newdata, times))
  emit(cs$case, "loo_quantile", t(sapply(refits, function(r) as.vector(t(r$quantile)))))
  emit(cs$case, "loo_survival", t(sapply(refits, function(r) as.vector(t(r$survival)))))
}
write.csv(do.call(rbind, rows), file.path(outdir, "reference.csv"), row.names = FALSE)
