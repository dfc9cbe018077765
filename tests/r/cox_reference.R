# Reference numbers from R's survival package for the Cox core tests.
#
# Usage: Rscript cox_reference.R SEED OUTDIR [N]
# Writes OUTDIR/data.csv (a simulated data set with many ties, a covariate far from
# unit variance, a binary covariate, 3 strata and non-integer case weights) and
# OUTDIR/reference.csv in long format: config, quantity, row, col, value, for the
# 8 configurations {efron, breslow} x {no strata, strata} x {no weights, weights}.
# Quantities: coef, loglik, information (inverse of naive.var, else var), score (resid "score"),
# dfbeta (resid "dfbeta", weighted as R does by default), loo (coefficients refitted
# without each row, warm-started, converged to eps = 1e-14).
suppressPackageStartupMessages(library(survival))
args <- commandArgs(trailingOnly = TRUE)
seed <- as.integer(args[1]); outdir <- args[2]
n <- if (length(args) >= 3) as.integer(args[3]) else 90L
set.seed(seed)
x1 <- rnorm(n)
x2 <- 50 + 10 * runif(n)          # far from unit variance: lifelines' residuals get this wrong
x3 <- rbinom(n, 1, 0.4)
eta <- 0.5 * x1 + 0.05 * (x2 - 55) - 0.4 * x3
time <- ceiling(8 * rexp(n, exp(eta)))   # integer times: many ties
status <- rbinom(n, 1, 0.75)
s <- sample(c("a", "b", "c"), n, replace = TRUE)
w <- round(runif(n, 0.5, 2.5), 3)
d <- data.frame(time = time, status = status, x1 = x1, x2 = x2, x3 = x3, s = s, w = w)
dir.create(outdir, showWarnings = FALSE, recursive = TRUE)
write.csv(d, file.path(outdir, "data.csv"), row.names = FALSE)

ctl <- coxph.control(eps = 1e-14, toler.chol = 1e-15, iter.max = 200)
rows <- list()
emit <- function(config, quantity, m) {
  m <- as.matrix(m)
  rows[[length(rows) + 1]] <<- data.frame(
    config = config, quantity = quantity,
    row = rep(seq_len(nrow(m)) - 1L, times = ncol(m)),
    col = rep(seq_len(ncol(m)) - 1L, each = nrow(m)),
    value = as.vector(m))
}
for (ties in c("efron", "breslow")) for (strat in c(FALSE, TRUE)) for (wtd in c(FALSE, TRUE)) {
  config <- paste(ties, if (strat) "strata" else "nostrata", if (wtd) "weights" else "noweights",
                  sep = "_")
  f <- if (strat) Surv(time, status) ~ x1 + x2 + x3 + strata(s) else Surv(time, status) ~ x1 + x2 + x3
  d$wt <- if (wtd) d$w else rep(1, n)
  fit <- coxph(f, data = d, weights = wt, ties = ties, control = ctl)
  emit(config, "coef", matrix(coef(fit), nrow = 1))
  emit(config, "loglik", matrix(fit$loglik[2], nrow = 1))
  # non-integer weights make coxph report a robust variance in fit$var; the inverse
  # observed information is then fit$naive.var
  emit(config, "information", solve(if (is.null(fit$naive.var)) fit$var else fit$naive.var))
  emit(config, "score", resid(fit, "score"))
  emit(config, "dfbeta", resid(fit, "dfbeta"))
  loo <- t(sapply(seq_len(n), function(i) {
    coef(coxph(f, data = d[-i, ], weights = wt, ties = ties, control = ctl, init = coef(fit)))
  }))
  emit(config, "loo", loo)
}
write.csv(do.call(rbind, rows), file.path(outdir, "reference.csv"), row.names = FALSE)
cat("R", R.version$major, R.version$minor, "survival", as.character(packageVersion("survival")), "\n")
