# Why cmprsk's crr differs from ci.fit_fine_gray when a censoring and a competing failure
# are tied at time 0 (docs/validation.md; tests/test_fine_gray_time_zero.py runs this).
#
# crr weights a subject who failed from another cause at time T_j by G(t-) / G(T_j-) at a
# later failure time t, G the censoring distribution's Kaplan-Meier estimate (survfit). It
# reads G just before each subject's time by evaluating a step function a little to the
# left of it:
#   approx(c(min(0, u$time) - 10 * eps, u$time, ...), c(1, u$surv, 0),
#          xout = ftime * (1 - 100 * eps), method = "constant", f = 0, rule = 2)
# For ftime > 0 the point lies left of the knot at ftime and gives G(ftime-). For ftime = 0
# the product is 0 itself, the knot of the censorings at 0, so crr reads G(0) (after
# them: 1 - 1/n with one censoring at 0 among n subjects) where G(0-) = 1. A competing
# failure at 0 is then weighted by G(t-) / G(0) instead of G(t-). ci.fit_fine_gray (as
# crr does at every other time) counts a failure tied with a censoring as at risk at it:
# G(0-) = 1. crr with the left limit read at 0 as well equals ci.fit_fine_gray.
#
# Usage: Rscript crr_time_zero.R OUT_DIR
#   writes OUT_DIR/data.csv (ft, fs, x1, x2: n = 800, times rounded to 0.01, so that some
#   failures of both causes fall at 0, and the first subject censored at 0) and
#   OUT_DIR/crr.csv: crr's coefficients, those of crr reading G(0-) at time 0, and the G
#   crr reads at time 0.
suppressPackageStartupMessages({library(cmprsk); library(survival)})
out <- commandArgs(trailingOnly = TRUE)[1]

set.seed(1)
n <- 800
x1 <- rnorm(n); x2 <- rbinom(n, 1, 0.5)
t1 <- rexp(n, exp(0.5 * x1)); t2 <- rexp(n, 0.5); cz <- rexp(n, 0.3)
ft <- round(pmin(t1, t2, cz), 2)
fs <- ifelse(t1 <= pmin(t2, cz), 1, ifelse(t2 <= cz, 2, 0))
fs[1] <- 0; ft[1] <- 0                       # a censoring at time 0
d <- data.frame(ft, fs, x1, x2)
write.csv(d, file.path(out, "data.csv"), row.names = FALSE)

# crr with one change: at time 0 it reads G just left of 0, the left limit G(0-) = 1
src <- deparse(crr)
at <- grep("xout = ftime * (1 - 100 * .Machine$double.eps)", src, fixed = TRUE)
stopifnot(length(at) == 1)
src[at] <- sub("xout = ftime * (1 - 100 * .Machine$double.eps)",
               paste("xout = ifelse(ftime > 0, ftime * (1 - 100 * .Machine$double.eps),",
                     "-5 * .Machine$double.eps)"),
               src[at], fixed = TRUE)
crr_left <- eval(parse(text = src))
environment(crr_left) <- environment(crr)

X <- cbind(x1 = d$x1, x2 = d$x2)
fit <- crr(d$ft, d$fs, X, failcode = 1, cencode = 0, gtol = 1e-12)
left <- crr_left(d$ft, d$fs, X, failcode = 1, cencode = 0, gtol = 1e-12)

# the G crr reads at time 0, as crr computes it
u <- survfit(Surv(ft, fs == 0) ~ 1, data = d)
g0 <- approx(c(min(0, u$time) - 10 * .Machine$double.eps,
               c(u$time, max(u$time) * (1 + 10 * .Machine$double.eps))),
             c(1, u$surv, 0), xout = 0 * (1 - 100 * .Machine$double.eps),
             method = "constant", f = 0, rule = 2)$y
res <- data.frame(what = c("crr", "crr_left_limit_at_0"),
                  x1 = c(fit$coef[1], left$coef[1]), x2 = c(fit$coef[2], left$coef[2]),
                  G_read_at_0 = c(g0, 1))
write.csv(res, file.path(out, "crr.csv"), row.names = FALSE)
