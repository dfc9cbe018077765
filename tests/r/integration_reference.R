# Golden reference for the lifelines / statsmodels integrations and the survival target.
#
# Usage: Rscript tests/r/integration_reference.R tests/fixtures/integration
# Reads DIR/gbsg2_subset.csv (300 GBSG2 patients from lifelines' bundled copy, covariates
# left on their original, far-from-unit-variance scales: age, tsize, pnodes, progrec,
# estrec, horTh) and writes DIR/reference.csv in long format: config, quantity, row, col, value.
#   efron                 Surv(time, cens) ~ covariates, Efron ties
#   efron_strata_weights  + strata(tgrade), weights = w
#   breslow               Breslow ties (statsmodels' default)
#   efron_strata          Efron ties + strata(tgrade), no weights (statsmodels PHReg with
#                         ties="efron" and strata; coef, loglik, se, dfbeta only)
# Quantities: coef, loglik, se (model-based: sqrt(diag(fit$naive.var)) where coxph made
# the robust variance its default, as it does for non-integer weights), dfbeta
# (resid(fit, "dfbeta")), and for efron and breslow:
#   dfbetas (resid(fit, "dfbetas")),
#   surv (survfit(fit, newdata)$surv at the times below for the 3 new patients below;
#   row = patient, col = time) and, for efron, surv_loo (the same survival probabilities
#   refitted without each of the first 25 rows; row = deleted row, col = patient * 3 + time).
#   For efron_strata_weights the same two quantities with the new patients in strata
#   tgrade = III, I, II (survfit's per-stratum baseline hazard; weighted refits).
suppressPackageStartupMessages(library(survival))
args <- commandArgs(trailingOnly = TRUE)
dir <- args[1]
d <- read.csv(file.path(dir, "gbsg2_subset.csv"))
ctl <- coxph.control(eps = 1e-14, toler.chol = 1e-15, iter.max = 200)
f <- Surv(time, cens) ~ age + tsize + pnodes + progrec + estrec + horTh
fs <- Surv(time, cens) ~ age + tsize + pnodes + progrec + estrec + horTh + strata(tgrade)
newp <- data.frame(age = c(45, 60, 70), tsize = c(20, 35, 50), pnodes = c(1, 5, 15),
                   progrec = c(100, 20, 5), estrec = c(80, 10, 200), horTh = c(1, 0, 0))
newp_strata <- cbind(newp, tgrade = c("III", "I", "II"))
times <- c(365, 1000, 1800)
rows <- list()
emit <- function(config, quantity, m) {
  m <- as.matrix(m)
  rows[[length(rows) + 1]] <<- data.frame(
    config = config, quantity = quantity,
    row = rep(seq_len(nrow(m)) - 1L, times = ncol(m)),
    col = rep(seq_len(ncol(m)) - 1L, each = nrow(m)), value = as.vector(m))
}
surv_at <- function(fit, nd = newp) {
  sf <- survfit(fit, newdata = nd)
  if (!is.null(fit$strata) || "strata" %in% names(sf)) {
    # one curve per new patient (each in its own stratum): read them one at a time
    return(t(sapply(seq_len(nrow(nd)), function(p)
      summary(sf[p], times = times, extend = TRUE)$surv)))
  }
  t(summary(sf, times = times, extend = TRUE)$surv)   # patients x times
}
for (config in c("efron", "efron_strata_weights", "breslow", "efron_strata")) {
  ties <- if (config == "breslow") "breslow" else "efron"
  if (config == "efron_strata_weights") {
    fit <- coxph(fs, data = d, weights = w, ties = ties, control = ctl)
  } else if (config == "efron_strata") {
    fit <- coxph(fs, data = d, ties = ties, control = ctl)
  } else {
    fit <- coxph(f, data = d, ties = ties, control = ctl)
  }
  emit(config, "coef", matrix(coef(fit), nrow = 1))
  emit(config, "loglik", matrix(fit$loglik[2], nrow = 1))
  # model-based standard errors: with non-integer weights coxph's default var is the
  # robust (sandwich) one and the model-based one is naive.var
  emit(config, "se", matrix(sqrt(diag(if (is.null(fit$naive.var)) fit$var else fit$naive.var)),
                            nrow = 1))
  emit(config, "dfbeta", resid(fit, "dfbeta"))
  if (config == "efron_strata") next
  if (config != "efron_strata_weights") emit(config, "dfbetas", resid(fit, "dfbetas"))
  if (config != "efron_strata_weights") emit(config, "surv", surv_at(fit))
  if (config == "efron_strata_weights") {
    emit(config, "surv", surv_at(fit, newp_strata))
    loo <- t(sapply(1:25, function(i) {
      di <- d[-i, ]   # survfit re-reads the model frame: keep it (model = TRUE)
      fi <- coxph(fs, data = di, weights = w, ties = ties, control = ctl, init = coef(fit),
                  model = TRUE, x = TRUE)
      as.vector(t(surv_at(fi, newp_strata)))
    }))
    emit(config, "surv_loo", loo)
  }
  if (config == "efron") {
    loo <- t(sapply(1:25, function(i) {
      fi <- coxph(f, data = d[-i, ], ties = ties, control = ctl, init = coef(fit), model = TRUE, x = TRUE)
      as.vector(t(surv_at(fi)))
    }))
    emit(config, "surv_loo", loo)
  }
}
write.csv(do.call(rbind, rows), file.path(dir, "reference.csv"), row.names = FALSE)
cat("R", R.version$major, R.version$minor, "survival", as.character(packageVersion("survival")), "\n")
