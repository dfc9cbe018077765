# R recipe: the Fine-Gray model with case weights, as `ci.fit_fine_gray(..., weights=w)` fits it.
#
# A subject of weight w counts w times everywhere: in the risk sets, in the failure counts
# AND in the Kaplan-Meier estimate of the censoring distribution that weights the subjects
# who failed from another cause. `survival::finegray(..., weights = w)` + `coxph(weights =
# fgwt)` does not do the last part: finegray estimates the censoring Kaplan-Meier without
# the case weights and only multiplies them in afterwards. This recipe expands the data
# explicitly with the weighted Kaplan-Meier (crr's conventions: a failure at s is at risk
# for a censoring at s; G is 0 after the last time) and fits `coxph` on the expansion.
# `tests/test_fine_gray_r_recipe.py` runs it and compares it with `ci.fit_fine_gray`.
#
# Usage: Rscript fine_gray_weighted.R data.csv time status cause weights covariate...
#        (or source() it and call fine_gray_weighted())
suppressPackageStartupMessages(library(survival))

# G(t-) of the weighted censoring Kaplan-Meier at the times `at`: its value at the largest
# survfit time strictly below t (1 if none), 0 after the last observed time
censoring_left <- function(time, status, w, at) {
  km <- survfit(Surv(time, status == 0) ~ 1, weights = w)
  G <- vapply(at, function(t) {
    before <- which(km$time < t)
    if (length(before) == 0) 1 else km$surv[max(before)]
  }, numeric(1))
  G[at > max(time)] <- 0
  G
}

# The Fine-Gray fit of `cause` with case weights w (status 0 = censored, 1..K causes).
# Each subject is a row (-1, T_j]; a subject j who failed from another cause is, in
# addition, at risk at every later failure time t_k of the cause with the weight
# w_j G(t_k-) / G(T_j-).
fine_gray_weighted <- function(time, status, X, w, cause = 1, ties = "breslow") {
  X <- as.data.frame(X)
  n <- length(time)
  rows <- list(data.frame(id = seq_len(n), start = -1, stop = time,
                          event = as.integer(status == cause), wt = w))
  fail <- sort(unique(time[status == cause]))
  comp <- which(status != cause & status != 0)
  G_fail <- censoring_left(time, status, w, fail)
  G_own <- censoring_left(time, status, w, time[comp])
  for (k in seq_along(comp)) {
    j <- comp[k]
    later <- which(fail > time[j])
    if (length(later) == 0) next
    prev <- c(-Inf, fail)[later]          # the failure time before each t_k
    r <- data.frame(id = j, start = pmax(prev, time[j]), stop = fail[later], event = 0L,
                    wt = w[j] * G_fail[later] / G_own[k])
    rows[[length(rows) + 1]] <- r[r$wt > 0, ]
  }
  e <- do.call(rbind, rows)
  e <- cbind(e, X[e$id, , drop = FALSE])
  fml <- as.formula(paste("Surv(start, stop, event) ~", paste(names(X), collapse = " + ")))
  coxph(fml, data = e, weights = wt, ties = ties,
        control = coxph.control(eps = 1e-12, iter.max = 100))
}

if (!interactive() && length(commandArgs(trailingOnly = TRUE)) >= 6) {
  a <- commandArgs(trailingOnly = TRUE)
  d <- read.csv(a[1])
  fit <- fine_gray_weighted(d[[a[2]]], d[[a[3]]], d[, a[-(1:5)], drop = FALSE], d[[a[5]]],
                            cause = as.integer(a[4]))
  write.csv(data.frame(term = names(coef(fit)), coef = unname(coef(fit))),
            stdout(), row.names = FALSE)
}
