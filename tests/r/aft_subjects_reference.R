# Reference numbers from R's survreg for AFT subjects (tests/test_aft_subjects.py): several
# rows per subject, the subject deleted whole, dfbeta collapsed per subject, the robust
# covariance clustered on the subject.
#
# Usage: Rscript aft_subjects_reference.R OUTDIR [SEED]
# Writes into OUTDIR:
#   data_lung.csv: R's lung (NA rows of the columns used dropped, status - 1) with
#     artificial subjects `id` (runs of 2 or 3 consecutive rows; labels a seeded
#     permutation, so sorted label order is not row order) and case weights `w` (seeded);
#   data_random.csv: a simulated design (SEED) of subjects with 2 or 3 rows each (labels
#     permuted as lung's): `x1` a subject-level covariate, `x2` a row-level one, Weibull
#     times, right censoring;
#   cases.csv: case, dataset, dist, covariates ("+"-joined), weights;
#   reference.csv, long format case, quantity, row, col, value. Quantities: coef (coef(fit),
#     then log(fit$scale) unless exponential), loglik (fit$loglik[2]), var (fit$naive.var:
#     the inverse information), robust_var (vcov(fit) of survreg(..., cluster = id)),
#     id_labels (the sorted subject labels), dfbeta_id (residuals(fit, "dfbeta",
#     collapse = id): per unit of case weight) and dfbeta_id_w (the same with weighted =
#     TRUE), one row per subject in sorted label order; lso_labels and lso (the
#     parameters refitted without every row of each of 5 subjects).
# Every fit converges to rel.tolerance 1e-13.
suppressPackageStartupMessages(library(survival))
args <- commandArgs(trailingOnly = TRUE)
outdir <- args[1]
seed <- if (length(args) >= 2) as.integer(args[2]) else 20261125L
set.seed(seed)
dir.create(outdir, showWarnings = FALSE, recursive = TRUE)
ctl <- survreg.control(rel.tolerance = 1e-13, toler.chol = 1e-15, maxiter = 200)

runs <- function(n) {                   # subject codes 1..S: runs of 2 or 3 rows
  sizes <- integer(0)
  while (sum(sizes) < n) sizes <- c(sizes, sample(2:3, 1))
  sizes[length(sizes)] <- sizes[length(sizes)] - (sum(sizes) - n)
  if (sizes[length(sizes)] < 2) {       # a last run of 1 row joins the one before
    sizes[length(sizes) - 1] <- sizes[length(sizes) - 1] + sizes[length(sizes)]
    sizes <- sizes[-length(sizes)]
  }
  rep(seq_along(sizes), sizes)
}

lung2 <- na.omit(lung[, c("time", "status", "age", "sex", "ph.ecog")])
lung2$status <- lung2$status - 1
rownames(lung2) <- NULL
code <- runs(nrow(lung2))
lung2$id <- (sample(max(code)) * 7L)[code]
lung2$w <- round(runif(nrow(lung2), 0.5, 2.5), 3)

S <- 60
size <- sample(2:3, S, replace = TRUE)
sid <- rep(seq_len(S), size)
n <- length(sid)
x1 <- rnorm(S)[sid]
x2 <- rbinom(n, 1, 0.5)
tt <- exp(1 + 0.5 * x1 - 0.4 * x2 + 0.7 * log(rexp(n)))
cens <- runif(n, 0.5, 8)
rand <- data.frame(time = pmin(tt, cens), status = as.numeric(tt <= cens), x1 = x1,
                   x2 = x2, id = (100L + 3L * sample(S))[sid], w = 1)
write.csv(lung2, file.path(outdir, "data_lung.csv"), row.names = FALSE)
write.csv(rand, file.path(outdir, "data_random.csv"), row.names = FALSE)
datasets <- list(lung = lung2, random = rand)
covs <- list(lung = c("age", "sex", "ph.ecog"), random = c("x1", "x2"))

dists <- c("weibull", "exponential", "lognormal", "loglogistic")
cases <- list()
for (ds in c("lung", "random")) for (dist in dists)
  cases[[length(cases) + 1]] <- list(dataset = ds, dist = dist, weights = FALSE)
cases[[length(cases) + 1]] <- list(dataset = "lung", dist = "weibull", weights = TRUE)

# the long-format writer (emit) and survreg's full parameter vector (full_coef) are
# aft_reference.R's: their definitions are read from it, not copied
here <- dirname(normalizePath(sub("^--file=", "",
                                  grep("^--file=", commandArgs(FALSE), value = TRUE)[1])))
for (e in parse(file.path(here, "aft_reference.R")))
  if (is.call(e) && identical(e[[1]], as.name("<-")) && is.name(e[[2]]) &&
      as.character(e[[2]]) %in% c("emit", "full_coef")) eval(e)
rows <- list()
table <- list()
for (cs in cases) {
  case <- paste(cs$dataset, cs$dist, if (cs$weights) "w" else "", sep = "_")
  d <- datasets[[cs$dataset]]
  d$wt <- if (cs$weights) d$w else rep(1, nrow(d))
  f <- as.formula(paste("Surv(time, status) ~", paste(covs[[cs$dataset]], collapse = " + ")))
  fitit <- function(dd) survreg(f, data = dd, weights = wt, dist = cs$dist, control = ctl,
                                model = TRUE)
  fit <- fitit(d)
  robust <- survreg(f, data = d, weights = wt, dist = cs$dist, control = ctl, cluster = id)
  emit(case, "coef", matrix(full_coef(fit, cs$dist), nrow = 1))
  emit(case, "loglik", matrix(fit$loglik[2], nrow = 1))
  emit(case, "var", robust$naive.var)
  emit(case, "robust_var", vcov(robust))
  db <- residuals(fit, "dfbeta", collapse = d$id)
  dbw <- residuals(fit, "dfbeta", collapse = d$id, weighted = TRUE)
  emit(case, "id_labels", matrix(as.numeric(rownames(db)), ncol = 1))
  emit(case, "dfbeta_id", db)
  emit(case, "dfbeta_id_w", dbw)
  big <- order(-rowSums(dbw^2))[1:3]
  pick <- as.numeric(rownames(db))[c(big, sample(setdiff(seq_len(nrow(db)), big), 2))]
  emit(case, "lso_labels", matrix(pick, ncol = 1))
  emit(case, "lso", t(sapply(pick, function(k) full_coef(fitit(d[d$id != k, ]), cs$dist))))
  table[[length(table) + 1]] <- data.frame(
    case = case, dataset = cs$dataset, dist = cs$dist,
    covariates = paste(covs[[cs$dataset]], collapse = "+"), weights = cs$weights)
}
write.csv(do.call(rbind, table), file.path(outdir, "cases.csv"), row.names = FALSE)
write.csv(do.call(rbind, rows), file.path(outdir, "reference.csv"), row.names = FALSE)
cat("R", R.version$major, R.version$minor, "survival", as.character(packageVersion("survival")),
    "\n")
