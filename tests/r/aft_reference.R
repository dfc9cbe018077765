# Reference numbers from R's survreg (survival package) for the AFT tests (tests/test_aft.py).
#
# Usage: Rscript aft_reference.R OUTDIR [SEED]
# Writes into OUTDIR:
#   data_lung.csv, data_ovarian.csv, data_veteran.csv: R's data sets as fitted here (lung:
#     NA rows of the columns used dropped, status - 1; veteran: celltype as 0/1 columns with
#     R's names), with case weights w (seeded) where a case uses them;
#   data_interval.csv: a simulated interval-censored design (SEED): lower (NA: left-censored),
#     upper (NA: right-censored), lower == upper exact;
#   cases.csv: case, dataset, dist, covariates ("+"-joined), weights, strata, cluster,
#     names (R's parameter names, "|"-joined);
#   reference.csv, long format case, quantity, row, col, value. Quantities: coef (the full
#     vector: coef(fit), then log(fit$scale) unless exponential), loglik (fit$loglik[2]),
#     var (the inverse information: fit$naive.var for robust fits, else vcov(fit)),
#     robust_var (vcov(fit) of survreg(robust = TRUE, cluster = )), dfbeta
#     (residuals(fit, "dfbeta"), per unit of case weight), dfbeta_cluster (the same
#     collapsed per cluster, weighted: rowsum(w * dfbeta, cluster)), loo_rows (0-based rows)
#     and loo (the parameters refitted without each of them), lco_labels and lco (refits
#     without each of some clusters).
# Every fit converges to rel.tolerance 1e-13.
suppressPackageStartupMessages(library(survival))
args <- commandArgs(trailingOnly = TRUE)
outdir <- args[1]
seed <- if (length(args) >= 2) as.integer(args[2]) else 20260126L
set.seed(seed)
dir.create(outdir, showWarnings = FALSE, recursive = TRUE)
ctl <- survreg.control(rel.tolerance = 1e-13, toler.chol = 1e-15, maxiter = 200)

lung2 <- na.omit(lung[, c("inst", "time", "status", "age", "sex", "ph.ecog")])
lung2$status <- lung2$status - 1
lung2$w <- round(runif(nrow(lung2), 0.5, 2.5), 3)
rownames(lung2) <- NULL
ov <- data.frame(time = ovarian$futime, status = ovarian$fustat, age = ovarian$age,
                 resid.ds = ovarian$resid.ds, rx = ovarian$rx, ecog.ps = ovarian$ecog.ps)
vet <- data.frame(time = veteran$time, status = veteran$status, karno = veteran$karno,
                  age = veteran$age, trt = veteran$trt,
                  celltypesmallcell = as.numeric(veteran$celltype == "smallcell"),
                  celltypeadeno = as.numeric(veteran$celltype == "adeno"),
                  celltypelarge = as.numeric(veteran$celltype == "large"))
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
write.csv(lung2, file.path(outdir, "data_lung.csv"), row.names = FALSE)
write.csv(ov, file.path(outdir, "data_ovarian.csv"), row.names = FALSE)
write.csv(vet, file.path(outdir, "data_veteran.csv"), row.names = FALSE)
write.csv(sim, file.path(outdir, "data_interval.csv"), row.names = FALSE)
datasets <- list(lung = lung2, ovarian = ov, veteran = vet, interval = sim)

covs <- list(lung = c("age", "sex", "ph.ecog"), ovarian = c("age", "resid.ds", "rx", "ecog.ps"),
             veteran = c("karno", "age", "trt", "celltypesmallcell", "celltypeadeno",
                         "celltypelarge"),
             interval = c("x1", "x2"))
dists <- c("weibull", "exponential", "lognormal", "loglogistic")
cases <- list()
add <- function(dataset, dist, weights = FALSE, strata = "", cluster = "") {
  name <- paste(dataset, dist, if (weights) "w" else "", strata, cluster, sep = "_")
  cases[[length(cases) + 1]] <<- list(case = name, dataset = dataset, dist = dist,
                                      weights = weights, strata = strata, cluster = cluster)
}
for (ds in c("lung", "ovarian", "veteran", "interval")) for (dist in dists) add(ds, dist)
for (dist in dists) add("lung", dist, weights = TRUE)
for (dist in c("weibull", "lognormal", "loglogistic")) add("lung", dist, strata = "sex")
add("lung", "weibull", weights = TRUE, strata = "sex")
for (dist in c("weibull", "lognormal")) add("lung", dist, cluster = "inst")
add("interval", "weibull", weights = TRUE)

rows <- list()
emit <- function(case, quantity, m) {
  m <- as.matrix(m)
  rows[[length(rows) + 1]] <<- data.frame(
    case = case, quantity = quantity,
    row = rep(seq_len(nrow(m)) - 1L, times = ncol(m)),
    col = rep(seq_len(ncol(m)) - 1L, each = nrow(m)),
    value = as.vector(m))
}
full_coef <- function(fit, dist) {
  if (dist == "exponential") coef(fit) else c(coef(fit), log(fit$scale))
}
table <- list()
for (cs in cases) {
  d <- datasets[[cs$dataset]]
  d$wt <- if (cs$weights) d$w else rep(1, nrow(d))
  lhs <- if (cs$dataset == "interval") "Surv(lower, upper, type = 'interval2')"
         else "Surv(time, status)"
  rhs <- paste(covs[[cs$dataset]], collapse = " + ")
  if (cs$strata != "") rhs <- paste0(rhs, " + strata(", cs$strata, ")")
  f <- as.formula(paste(lhs, "~", rhs))
  fitit <- function(dd) {
    if (cs$cluster != "") {
      dd$cl_ <- dd[[cs$cluster]]
      survreg(f, data = dd, weights = wt, dist = cs$dist, control = ctl, robust = TRUE,
              cluster = cl_, model = TRUE)
    } else {
      survreg(f, data = dd, weights = wt, dist = cs$dist, control = ctl, model = TRUE)
    }
  }
  fit <- fitit(d)
  co <- full_coef(fit, cs$dist)
  emit(cs$case, "coef", matrix(co, nrow = 1))
  emit(cs$case, "loglik", matrix(fit$loglik[2], nrow = 1))
  emit(cs$case, "var", if (is.null(fit$naive.var)) vcov(fit) else fit$naive.var)
  db <- residuals(fit, "dfbeta")
  emit(cs$case, "dfbeta", db)
  if (cs$cluster != "") {
    emit(cs$case, "robust_var", vcov(fit))
    cl <- d[[cs$cluster]]
    dc <- rowsum(d$wt * db, cl)                       # rows in sorted label order
    emit(cs$case, "dfbeta_cluster", dc)
    big <- order(-rowSums(dc^2))[1:5]
    labels <- sort(unique(cl))[big]
    emit(cs$case, "lco_labels", matrix(labels, ncol = 1))
    emit(cs$case, "lco", t(sapply(labels, function(k) full_coef(fitit(d[cl != k, ]),
                                                                    cs$dist))))
  }
  nr <- nrow(d)
  if (nr <= 30) {
    pick <- seq_len(nr)
  } else {
    sc <- rowSums((d$wt * db)^2 %*% diag(1 / diag(vcov(fit)), ncol(db)))
    top <- order(-sc)[1:5]
    pick <- c(top, sample(setdiff(seq_len(nr), top), 5))
  }
  emit(cs$case, "loo_rows", matrix(pick - 1L, ncol = 1))
  emit(cs$case, "loo", t(sapply(pick, function(i) full_coef(fitit(d[-i, ]), cs$dist))))
  nm <- if (cs$dist == "exponential") names(coef(fit)) else colnames(vcov(fit))
  table[[length(table) + 1]] <- data.frame(
    case = cs$case, dataset = cs$dataset, dist = cs$dist,
    covariates = paste(covs[[cs$dataset]], collapse = "+"), weights = cs$weights,
    strata = cs$strata, cluster = cs$cluster, names = paste(nm, collapse = "|"))
}
write.csv(do.call(rbind, table), file.path(outdir, "cases.csv"), row.names = FALSE)
write.csv(do.call(rbind, rows), file.path(outdir, "reference.csv"), row.names = FALSE)
cat("R", R.version$major, R.version$minor, "survival", as.character(packageVersion("survival")),
    "\n")
