# Reference model comparisons and IPA (tests/test_compare.py, issue 46 items 3, 4, 7):
# riskRegression::Score's contrasts (contrasts = TRUE, the "Null model" included:
# $AUC$contrasts and $Brier$contrasts, IPCW with the test set's censoring Kaplan-Meier,
# cens.model = "km", conservative = FALSE, influence-function SEs) and its IPA
# (summary = "ipa": 1 - Brier / Brier of the null model), and the difference of two
# models' concordance with the SE from their joint variance (survival::concordance,
# Harrell: timewt = "n", Uno: timewt = "n/G2").
#
# Usage: Rscript compare_reference.R DATA_DIR OUT_DIR CASE
# Reads DATA_DIR/CASE_data.csv and DATA_DIR/CASE_times.csv (the layout of
#   tests/r/evaluate_reference.R: covariate columns, time, event or status, split, and
#   optionally stratum). The models, fitted on the training rows, in this order:
#   survival data: cox_small (coxph on the first 3 covariates, Efron ties), cox_full
#     (coxph on every covariate, + strata(stratum) when the column is there), aft (a
#     Weibull survreg on every covariate);
#   competing risks (a column status): fg_small (cmprsk::crr on the first covariate,
#     cause 1), fg_full (crr on every covariate), scored by Score(Hist(time, status) ~ 1,
#     cause = 1) on their predict.crr cumulative incidences.
# Writes OUT_DIR/CASE_contrasts.csv, columns metric, time, model, reference, delta, se,
#   lower, upper, p: Score's AUC contrasts (metric auc) and Brier contrasts (brier), rows
#   in Score's order within each time; then for survival data c_harrell and c_uno (time
#   NA): C(model) - C(reference) for every pair in Score's order, se = sqrt(v_mm + v_rr -
#   2 v_mr) from concordance(fit_r, fit_m, newdata = test)$var for two coxph fits, and
#   for a pair with the survreg fit from crossprod of each concordance(fit, newdata,
#   influence = 1)$dfbeta (equal to the joint var for coxph pairs); lower/upper the 95%
#   Wald interval, p = 2 pnorm(-|delta / se|).
# and OUT_DIR/CASE_ipa.csv, columns model, time, brier, ipa: Score's Brier and IPA of
#   every model and of the "Null model".
suppressPackageStartupMessages({library(survival); library(riskRegression)})
args <- commandArgs(trailingOnly = TRUE)
data_dir <- args[1]
out_dir <- args[2]
case <- args[3]
d <- read.csv(file.path(data_dir, paste0(case, "_data.csv")))
times <- read.csv(file.path(data_dir, paste0(case, "_times.csv")))$t
competing <- "status" %in% names(d)
covs <- setdiff(names(d), c("time", "event", "status", "split", "stratum"))
train <- d[d$split == "train", ]
test <- d[d$split == "test", ]

if (competing) {
  suppressPackageStartupMessages(library(cmprsk))
  crr_risk <- function(cols) {
    fit <- crr(train$time, train$status, cov1 = as.matrix(train[, cols, drop = FALSE]),
               failcode = 1, cencode = 0)
    pr <- predict(fit, cov1 = as.matrix(test[, cols, drop = FALSE]))
    at <- findInterval(times, pr[, 1])
    t(sapply(seq_len(nrow(test)), function(i) c(0, pr[, i + 1])[at + 1]))
  }
  risks <- list(fg_small = crr_risk(covs[1]), fg_full = crr_risk(covs))
  sc <- Score(risks, formula = Hist(time, status) ~ 1, data = test, cause = 1,
              times = times, metrics = c("brier", "auc"), cens.model = "km",
              se.fit = TRUE, null.model = TRUE, contrasts = TRUE, summary = "ipa",
              conservative = FALSE)
  fits <- list()
} else {
  small <- as.formula(paste("Surv(time, event) ~", paste(covs[1:3], collapse = " + ")))
  rhs <- paste(c(covs, if ("stratum" %in% names(d)) "strata(stratum)"), collapse = " + ")
  full <- as.formula(paste("Surv(time, event) ~", rhs))
  aft_form <- as.formula(paste("Surv(time, event) ~", paste(covs, collapse = " + ")))
  fits <- list(cox_small = coxph(small, data = train, ties = "efron"),
               cox_full = coxph(full, data = train, ties = "efron"),
               aft = survreg(aft_form, data = train, dist = "weibull"))
  cox_risk <- function(fit) {
    sf <- summary(survfit(fit, newdata = test), times = times, extend = TRUE)
    1 - t(matrix(sf$surv, nrow = length(times)))
  }
  lp_aft <- predict(fits$aft, newdata = test, type = "lp")
  risks <- list(cox_small = cox_risk(fits$cox_small), cox_full = cox_risk(fits$cox_full),
                aft = sapply(times, function(t) psurvreg(t, lp_aft, fits$aft$scale,
                                                          "weibull")))
  sc <- Score(risks, formula = Surv(time, event) ~ 1, data = test, times = times,
              metrics = c("brier", "auc"), cens.model = "km", se.fit = TRUE,
              null.model = TRUE, contrasts = TRUE, summary = "ipa", conservative = FALSE)
}

as_rows <- function(tab, metric, delta) {
  data.frame(metric = metric, time = tab$times, model = as.character(tab$model),
             reference = as.character(tab$reference), delta = tab[[delta]], se = tab$se,
             lower = tab$lower, upper = tab$upper, p = tab$p)
}
out <- rbind(as_rows(sc$AUC$contrasts, "auc", "delta.AUC"),
             as_rows(sc$Brier$contrasts, "brier", "delta.Brier"))

# C(model) - C(reference) with the SE from the joint variance, pairs in Score's order
z <- qnorm(0.975)
for (tw in c("n", "n/G2")) {
  metric <- if (tw == "n") "c_harrell" else "c_uno"
  nm <- names(fits)
  for (i in seq_along(nm)[-length(nm)]) {
    for (j in (i + 1):length(nm)) {
      fr <- fits[[nm[i]]]
      fm <- fits[[nm[j]]]
      if (inherits(fr, "coxph") && inherits(fm, "coxph")) {
        cc <- concordance(fr, fm, newdata = test, timewt = tw)
        est <- unname(cc$concordance)
        V <- cc$var
      } else {
        cr <- concordance(fr, newdata = test, timewt = tw, influence = 1)
        cm <- concordance(fm, newdata = test, timewt = tw, influence = 1)
        est <- c(cr$concordance, cm$concordance)
        V <- crossprod(cbind(cr$dfbeta, cm$dfbeta))
      }
      delta <- est[2] - est[1]
      se <- sqrt(V[1, 1] + V[2, 2] - 2 * V[1, 2])
      out <- rbind(out, data.frame(metric = metric, time = NA, model = nm[j],
                                   reference = nm[i], delta = delta, se = se,
                                   lower = delta - z * se, upper = delta + z * se,
                                   p = 2 * pnorm(-abs(delta / se))))
    }
  }
}
write.csv(out, file.path(out_dir, paste0(case, "_contrasts.csv")), row.names = FALSE)
br <- sc$Brier$score
write.csv(data.frame(model = as.character(br$model), time = br$times, brier = br$Brier,
                     ipa = br$IPA),
          file.path(out_dir, paste0(case, "_ipa.csv")), row.names = FALSE)
