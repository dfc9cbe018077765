# Reference numbers for a Fine-Gray prediction at t = 0 (tests/test_fine_gray_time_zero.py):
# where the cause has failures at time 0, cmprsk's predict.crr has a jump there, and
# ci.fit_fine_gray(...).predict_cumulative_incidence(X_new, 0) must equal it.
#
# Usage: Rscript fine_gray_time_zero_reference.R OUTDIR [SEED]
# Writes into OUTDIR:
#   data.csv: x1, x2, cg (a censoring group), time, status (0 censored, 1, 2): simulated,
#     times rounded to 0.01 (ties), the first four rows at time 0: three failures of cause 1
#     and one of cause 2; no censoring at 0 (a censored time rounded to 0 is set to 0.01).
#     Why none: crr reads the censoring Kaplan-Meier G(T-) at T (1 - 100 eps), which at
#     T = 0 is G(0), not G(0-) = 1; so where a censoring and a competing failure are both at
#     0, crr weights that competing subject by G(t-) / G(0) (measured: coefficients 6e-4
#     apart from G(t-) / G(0-), the Fine-Gray weight, which ci.fit_fine_gray uses and crr
#     uses at every positive time);
#   new.csv: x1, x2 of three new patients;
#   reference.csv, long format case, quantity, row, col, value, for the cases "plain" (one
#     censoring group) and "cengroup" (cengroup = cg):
#     coef (crr's, gtol 1e-13 and Newton-polished: fine_gray_reference.R's fit_crr);
#     uftime (crr's fit$uftime, the cause's failure times, the first 0) and cif
#       (predict.crr(fit, new)[, -1]: uftime x patients);
#     times (0, half the first positive failure time, that time, the median failure time,
#       the last failure time) and cif_at (patients x times: predict.crr read at the times,
#       the last uftime <= t).
suppressPackageStartupMessages({library(survival); library(cmprsk)})
args <- commandArgs(trailingOnly = TRUE)
outdir <- args[1]
seed <- if (length(args) >= 2) as.integer(args[2]) else 20260144L
set.seed(seed)
dir.create(outdir, showWarnings = FALSE, recursive = TRUE)

# fit_crr and the long-format writer put are fine_gray_reference.R's: read, not copied
here <- dirname(normalizePath(sub("^--file=", "",
                                  grep("^--file=", commandArgs(FALSE), value = TRUE)[1])))
for (e in parse(file.path(here, "fine_gray_reference.R")))
  if (is.call(e) && identical(e[[1]], as.name("<-")) && is.name(e[[2]]) &&
      as.character(e[[2]]) %in% c("put", "fit_crr")) eval(e)
rows <- list()

n <- 80
d <- data.frame(x1 = round(rnorm(n), 3), x2 = rbinom(n, 1, 0.5), cg = sample(1:2, n, TRUE))
t1 <- rexp(n) * exp(-(0.5 * d$x1 - 0.4 * d$x2))
t2 <- rexp(n, 0.7)
cens <- runif(n, 0, 3)
d$time <- round(pmin(t1, t2, cens), 2)
d$status <- ifelse(cens < pmin(t1, t2), 0L, ifelse(t1 < t2, 1L, 2L))
d$time[d$status == 0 & d$time == 0] <- 0.01
d$time[1:4] <- 0
d$status[1:4] <- c(1L, 1L, 1L, 2L)
new <- data.frame(x1 = c(-1, 0, 1.3), x2 = c(0, 1, 1))
write.csv(d, file.path(outdir, "data.csv"), row.names = FALSE)
write.csv(new, file.path(outdir, "new.csv"), row.names = FALSE)

for (cengroup in c("", "cg")) {
  cs <- list(case = if (cengroup == "") "plain" else "cengroup", covariates = "x1+x2",
             time = "time", status = "status", cause = 1, cengroup = cengroup)
  f <- fit_crr(d, cs)
  p <- unclass(predict(f, as.matrix(new)))
  u <- f$uftime
  stopifnot(u[1] == 0)
  times <- c(0, u[2] / 2, u[2], u[ceiling(length(u) / 2)], max(u))
  k <- findInterval(times, p[, 1])
  put(cs$case, "coef", t(f$coef))
  put(cs$case, "uftime", u)
  put(cs$case, "cif", p[, -1, drop = FALSE])
  put(cs$case, "times", t(times))
  put(cs$case, "cif_at", t(rbind(0, p[, -1, drop = FALSE])[k + 1, , drop = FALSE]))
}
write.csv(do.call(rbind, rows), file.path(outdir, "reference.csv"), row.names = FALSE)
