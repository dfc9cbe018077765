# Reference numbers from riskRegression's CSC (cause-specific Cox models) and its predict
# (absolute risk, its standard error and iid decomposition) for tests/test_cause_specific.py.
#
# Usage: Rscript cause_specific_reference.R OUTDIR
# Writes into OUTDIR:
#   data_pbc.csv: survival::pbc's time, status (0 censored, 1 transplant, 2 death), age,
#     logbili = log(bili), albumin, edema, entry = pmin(time / 3, 200) (a delayed entry),
#     w (case weights) and tnt (time without ties, case noties);
#   reference.csv, long format case, quantity, row, col, value. Cases: efron (~ age +
#     logbili), breslow (cause 1 ~ age + logbili, cause 2 ~ age + logbili + albumin, ties
#     "breslow"), strata (+ strata(edema)), entry (Hist(time, status, entry = entry)),
#     weights (weights = w, w from 0.5 to 2: coefficients and SEs only, predictCox refuses
#     weighted fits), noties (Efron, time tnt: no ties). Quantities: coef_k, se_k
#     (sqrt(diag(vcov(model k)))), loglik_k; risk_k_pl1 / risk_k_pl0 (predict(..., cause =
#     k, product.limit = TRUE / FALSE)$absRisk, row the new patient, col the time),
#     riskse_k (absRisk.se); for noties iid_k / iid0_k (absRisk.iid with product.limit =
#     TRUE / FALSE, row the subject, col patient * length(times) + time, 0-based);
#     res_<type>_k (case efron: residuals(model k, type), type martingale, score,
#     schoenfeld, dfbeta); loo_coef (row the deleted subject, 0-based: CSC refitted
#     without it, every cause's coefficients) and loo_risk_1 (its absolute risk of cause 1,
#     product limit); case score: estimate_k and se_k (Score's Brier scores, AUCs and IBS
#     at 1000, 2000, 3000 of cause k's absolute risk, CSC fitted on rows 1..300, tested
#     on the rest: rows in that order).
# New patients: rows 1, 5, 9, 100 (1-based); times 500, 1000, 2000, 3000.
suppressPackageStartupMessages({library(survival); library(riskRegression)})
args <- commandArgs(trailingOnly = TRUE)
outdir <- args[1]
dir.create(outdir, showWarnings = FALSE, recursive = TRUE)
d <- data.frame(time = pbc$time, status = pbc$status, age = pbc$age,
                logbili = log(pbc$bili), albumin = pbc$albumin, edema = pbc$edema)
d$entry <- pmin(d$time / 3, 200)
d$w <- seq(0.5, 2, length.out = nrow(d))
set.seed(1)
d$tnt <- signif(d$time + runif(nrow(d), 0, 0.5), 12)
write.csv(d, file.path(outdir, "data_pbc.csv"), row.names = FALSE)
nd <- d[c(1, 5, 9, 100), ]
times <- c(500, 1000, 2000, 3000)
loo_rows <- c(0, 1, 2, 55, 200)
out <- list()
put <- function(case, quantity, m) {
  m <- as.matrix(m)
  out[[length(out) + 1]] <<- data.frame(case = case, quantity = quantity,
                                        row = as.vector(row(m)) - 1, col = as.vector(col(m)) - 1,
                                        value = as.vector(m))
}
fitters <- list(
  efron = function(data) CSC(Hist(time, status) ~ age + logbili, data = data),
  breslow = function(data) CSC(list(Hist(time, status) ~ age + logbili,
                                    Hist(time, status) ~ age + logbili + albumin),
                               data = data, ties = "breslow"),
  strata = function(data) CSC(Hist(time, status) ~ age + logbili + strata(edema), data = data),
  entry = function(data) CSC(Hist(time, status, entry = entry) ~ age + logbili, data = data),
  weights = function(data) CSC(Hist(time, status) ~ age + logbili, data = data, weights = data$w),
  noties = function(data) CSC(Hist(tnt, status) ~ age + logbili, data = data)
)
for (case in names(fitters)) {
  fit <- fitters[[case]](d)
  for (k in 1:2) {
    m <- fit$models[[k]]
    put(case, paste0("coef_", k), coef(m))
    put(case, paste0("se_", k), sqrt(diag(vcov(m))))
    put(case, paste0("loglik_", k), m$loglik[2])
    if (case == "efron") for (type in c("martingale", "score", "schoenfeld", "dfbeta"))
      put(case, paste0("res_", type, "_", k), residuals(m, type = type))
  }
  if (case == "weights") next
  for (k in 1:2) {
    p <- predict(fit, newdata = nd, times = times, cause = k, se = TRUE, iid = TRUE,
                 product.limit = TRUE)
    put(case, paste0("risk_", k, "_pl1"), p$absRisk)
    put(case, paste0("riskse_", k), p$absRisk.se)
    iid <- p$absRisk.iid            # subjects x times x patients
    flat <- matrix(NA_real_, dim(iid)[1], dim(iid)[2] * dim(iid)[3])
    for (j in seq_len(dim(iid)[3])) for (t in seq_len(dim(iid)[2]))
      flat[, (j - 1) * dim(iid)[2] + t] <- iid[, t, j]
    if (case == "noties") put(case, paste0("iid_", k), flat)
    p0 <- predict(fit, newdata = nd, times = times, cause = k, product.limit = FALSE,
                  iid = TRUE)
    put(case, paste0("risk_", k, "_pl0"), p0$absRisk)
    if (case == "noties") {
      iid <- p0$absRisk.iid
      for (j in seq_len(dim(iid)[3])) for (t in seq_len(dim(iid)[2]))
        flat[, (j - 1) * dim(iid)[2] + t] <- iid[, t, j]
      put(case, paste0("iid0_", k), flat)
    }
  }
  loo_coef <- NULL; loo_risk <- NULL
  for (r in loo_rows) {
    refit <- fitters[[case]](d[-(r + 1), ])
    loo_coef <- rbind(loo_coef, unlist(lapply(refit$models, coef)))
    p <- predict(refit, newdata = nd, times = times, cause = 1, product.limit = TRUE)
    loo_risk <- rbind(loo_risk, as.vector(t(p$absRisk)))
  }
  put(case, "loo_coef", loo_coef)
  put(case, "loo_risk_1", loo_risk)
}
put("all", "loo_rows", loo_rows)
# ci.evaluate: CSC fitted on rows 1..300, its absolute risk of cause k (product limit) for
# rows 301..418 scored by Score(Hist(time, status) ~ 1, cause) as for Fine-Gray
# (tests/r/evaluate_reference.R)
train <- d[1:300, ]
test <- d[301:nrow(d), ]
score_times <- c(1000, 2000, 3000)
fit <- CSC(Hist(time, status) ~ age + logbili, data = train)
for (k in 1:2) {
  risk <- predict(fit, newdata = test, times = score_times, cause = k)$absRisk
  # Score's AUC standard error for cause = 2 is not its own for the same data with the
  # causes relabelled (cause = 1): 0.235 against 0.048 at 2000 here (riskRegression
  # 2022.11.28; its Brier scores and AUCs agree); the test set is relabelled so that the
  # cause scored is 1
  scored <- test
  if (k == 2) scored$status <- c(0, 2, 1)[test$status + 1]
  sc <- Score(list(csc = risk), formula = Hist(time, status) ~ 1, data = scored, cause = 1,
              times = score_times, metrics = c("brier", "auc"), cens.model = "km",
              se.fit = TRUE, null.model = FALSE, summary = "ibs", keep = "vcov",
              conservative = FALSE)
  br <- sc$Brier$score[order(sc$Brier$score$times)]
  au <- sc$AUC$score[order(sc$AUC$score$times)]
  V <- as.matrix(sc$Brier$vcov)
  V[lower.tri(V)] <- t(V)[lower.tri(V)]
  w <- c(diff(c(0, score_times))[-1], 0) / max(score_times)
  put("score", paste0("estimate_", k), c(br$Brier, au$AUC, br$IBS[nrow(br)]))
  put("score", paste0("se_", k), c(br$se, au$se, sqrt(drop(t(w) %*% V %*% w))))
}
write.csv(do.call(rbind, out), file.path(outdir, "reference.csv"), row.names = FALSE)
