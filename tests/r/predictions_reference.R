# Reference predictions for new patients (tests/test_predictions.py, issue 35 item 2): R's
# survfit(coxph, newdata), predict.coxph, predict.survreg / psurvreg and cmprsk's
# predict.crr, on data simulated here (with ties, strata and weights).
#
# Usage: Rscript predictions_reference.R OUTDIR [SEED]
# Writes into OUTDIR:
#   cox_data.csv (x1, x2, x3, time, status, g, w), cox_new.csv (the new patients: x1, x2,
#     x3, g), cox_times.csv (one column t);
#   aft_data.csv (x1, x2, time, status, g), aft_new.csv (x1, x2, g), aft_times.csv;
#   fg_data.csv (x1, x2, time, status, cg), fg_new.csv (x1, x2), fg_times.csv;
#   reference.csv, long format: case, quantity, row (patient, 0-based), col (time, p or
#     coefficient, 0-based), value. Quantities:
#     Cox cases (cox_<ties>[_strata][_weights]): coef; surv and cumhaz (survfit(fit,
#       newdata = one patient)'s $surv and $cumhaz read at the times: the last time <= t,
#       1 and 0 before the first; survfit's default ctype: 2 for Efron ties, 1 for
#       Breslow); lp_zero and risk_zero (predict(fit, newdata, type = "lp" / "risk",
#       reference = "zero")), lp_centred (predict(fit, newdata, type = "lp"), R's default
#       reference: centred at the training means, within strata for a stratified fit);
#     AFT cases (aft_<dist>[_strata]): coef (with log(scale)); lp (predict(type = "lp"));
#       quantile (predict(fit, newdata, type = "quantile", p = c(0.1, 0.5, 0.9)),
#       patients x p); survival_psurvreg (1 - psurvreg(t, lp, scale of the patient's
#       stratum, dist), patients x times; 1 - p loses digits where S is small) and
#       survival (the same by R's upper tails: pweibull, plnorm, plogis with
#       lower.tail = FALSE);
#     Fine-Gray cases (fg[_cengroup]): coef; cif (predict.crr(fit, cov1 = new patients)
#       read at the times: the last failure time <= t, 0 before the first).
suppressPackageStartupMessages({library(survival); library(cmprsk)})
args <- commandArgs(trailingOnly = TRUE)
outdir <- args[1]
seed <- if (length(args) >= 2) as.integer(args[2]) else 20260135L
set.seed(seed)
dir.create(outdir, showWarnings = FALSE, recursive = TRUE)
write <- function(d, name) write.csv(d, file.path(outdir, name), row.names = FALSE)
rows <- list()
emit <- function(case, quantity, m) {
  m <- as.matrix(m)
  rows[[length(rows) + 1]] <<- data.frame(
    case = case, quantity = quantity,
    row = rep(seq_len(nrow(m)) - 1L, times = ncol(m)),
    col = rep(seq_len(ncol(m)) - 1L, each = nrow(m)),
    value = as.vector(m))
}
# a step function (times `at`, values `v`) read at `times`: the last at <= t, `first` before
step_at <- function(at, v, times, first) c(first, v)[findInterval(times, at) + 1]

# ------------------------------------------------------------------------------- Cox
n <- 150
cox <- data.frame(x1 = round(rnorm(n), 3), x2 = rbinom(n, 1, 0.4),
                  x3 = round(runif(n, 0, 3), 2), g = sample(c("a", "b", "c"), n, TRUE))
eta <- 0.6 * cox$x1 - 0.5 * cox$x2 + 0.3 * cox$x3 + c(a = 0, b = 0.4, c = -0.3)[cox$g]
cox$time <- pmax(1, round(8 * rexp(n) * exp(-eta)))          # integer times: many ties
cox$status <- rbinom(n, 1, 0.75)
cox$w <- round(runif(n, 0.5, 2), 2)
cox_new <- data.frame(x1 = c(-1, 0, 0.7, 1.5), x2 = c(0, 1, 0, 1), x3 = c(0.5, 1.2, 2.8, 0),
                      g = c("a", "b", "c", "a"))
ev <- sort(unique(cox$time[cox$status == 1]))
cox_times <- c(0.5, ev[1], ev[3] + 0.5, median(ev), ev[length(ev) - 1], max(ev), max(ev) + 5)
write(cox, "cox_data.csv"); write(cox_new, "cox_new.csv")
write(data.frame(t = cox_times), "cox_times.csv")
ctl <- coxph.control(eps = 1e-14, toler.chol = 1e-15, iter.max = 200)
for (ties in c("efron", "breslow")) for (strata in c(FALSE, TRUE)) for (wt in c(FALSE, TRUE)) {
  case <- paste0("cox_", ties, if (strata) "_strata" else "", if (wt) "_weights" else "")
  f <- if (strata) Surv(time, status) ~ x1 + x2 + x3 + strata(g)
       else Surv(time, status) ~ x1 + x2 + x3
  d <- cox
  d$wt <- if (wt) d$w else rep(1, n)
  fit <- coxph(f, data = d, weights = wt, ties = ties, control = ctl)
  emit(case, "coef", t(coef(fit)))
  surv <- cumhaz <- matrix(NA, nrow(cox_new), length(cox_times))
  for (i in seq_len(nrow(cox_new))) {
    sf <- survfit(fit, newdata = cox_new[i, , drop = FALSE])
    surv[i, ] <- step_at(sf$time, sf$surv, cox_times, 1)
    cumhaz[i, ] <- step_at(sf$time, sf$cumhaz, cox_times, 0)
  }
  emit(case, "surv", surv)
  emit(case, "cumhaz", cumhaz)
  emit(case, "lp_zero", predict(fit, cox_new, type = "lp", reference = "zero"))
  emit(case, "risk_zero", predict(fit, cox_new, type = "risk", reference = "zero"))
  emit(case, "lp_centred", predict(fit, cox_new, type = "lp"))
}

# ------------------------------------------------------------------------------- AFT
n <- 160
aft <- data.frame(x1 = round(rnorm(n), 3), x2 = rbinom(n, 1, 0.5),
                  g = sample(c("m", "f"), n, TRUE))
sigma <- c(m = 0.6, f = 1.1)[aft$g]
aft$time <- round(exp(2 + 0.4 * aft$x1 - 0.5 * aft$x2 + sigma * log(rexp(n))), 4) + 0.001
cens <- round(runif(n, 1, 30), 3)
aft$status <- as.integer(aft$time <= cens)
aft$time <- pmin(aft$time, cens)
aft_new <- data.frame(x1 = c(-1.2, 0, 0.8), x2 = c(1, 0, 1), g = c("m", "f", "f"))
aft_times <- c(0.5, 2, 5, 10, 40)
write(aft, "aft_data.csv"); write(aft_new, "aft_new.csv")
write(data.frame(t = aft_times), "aft_times.csv")
sctl <- survreg.control(rel.tolerance = 1e-13, toler.chol = 1e-15, maxiter = 200)
probs <- c(0.1, 0.5, 0.9)
for (dist in c("weibull", "exponential", "lognormal", "loglogistic", "weibull_strata")) {
  strata <- dist == "weibull_strata"
  dd <- if (strata) "weibull" else dist
  f <- if (strata) Surv(time, status) ~ x1 + x2 + strata(g) else Surv(time, status) ~ x1 + x2
  fit <- survreg(f, data = aft, dist = dd, control = sctl)
  case <- paste0("aft_", dist)
  emit(case, "coef", t(if (dd == "exponential") coef(fit) else c(coef(fit), log(fit$scale))))
  lp <- predict(fit, aft_new, type = "lp")
  emit(case, "lp", lp)
  emit(case, "quantile", matrix(predict(fit, aft_new, type = "quantile", p = probs),
                                ncol = length(probs)))
  sig <- if (strata) fit$scale[aft_new$g] else rep(fit$scale, nrow(aft_new))
  emit(case, "survival_psurvreg", sapply(aft_times, function(t) 1 - psurvreg(t, lp, sig, dd)))
  # the same without 1 - p's cancellation where S is small: R's upper tails
  upper <- function(t) switch(dd,
    weibull = , exponential = pweibull(t, 1 / sig, exp(lp), lower.tail = FALSE),
    lognormal = plnorm(t, lp, sig, lower.tail = FALSE),
    loglogistic = plogis(log(t), lp, sig, lower.tail = FALSE))
  emit(case, "survival", sapply(aft_times, upper))
}

# ------------------------------------------------------------------------- Fine-Gray
n <- 200
fg <- data.frame(x1 = round(rnorm(n), 3), x2 = rbinom(n, 1, 0.5), cg = sample(1:2, n, TRUE))
t1 <- rexp(n) * exp(-(0.5 * fg$x1 - 0.4 * fg$x2))
t2 <- rexp(n, 0.7)
cens <- runif(n, 0, 3)
fg$time <- round(pmin(t1, t2, cens), 3) + 0.001
fg$status <- ifelse(cens < pmin(t1, t2), 0L, ifelse(t1 < t2, 1L, 2L))
fg_new <- data.frame(x1 = c(-1, 0, 1.3), x2 = c(0, 1, 1))
fail <- sort(unique(fg$time[fg$status == 1]))
fg_times <- c(fail[1] / 2, fail[1], quantile(fail, c(0.25, 0.5, 0.9), type = 1, names = FALSE),
              max(fail) + 1)
write(fg, "fg_data.csv"); write(fg_new, "fg_new.csv")
write(data.frame(t = fg_times), "fg_times.csv")
for (cg in c(FALSE, TRUE)) {
  case <- if (cg) "fg_cengroup" else "fg"
  cov <- as.matrix(fg[, c("x1", "x2")])
  fit <- if (cg) crr(fg$time, fg$status, cov, failcode = 1, cencode = 0, cengroup = fg$cg,
                     gtol = 1e-13, maxiter = 200)
         else crr(fg$time, fg$status, cov, failcode = 1, cencode = 0, gtol = 1e-13,
                  maxiter = 200)
  emit(case, "coef", t(fit$coef))
  p <- unclass(predict(fit, cov1 = as.matrix(fg_new)))
  emit(case, "cif", t(apply(p[, -1, drop = FALSE], 2,
                            function(v) step_at(p[, 1], v, fg_times, 0))))
}
out <- do.call(rbind, rows)
write.csv(out, file.path(outdir, "reference.csv"), row.names = FALSE)
