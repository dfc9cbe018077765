# Reference test-set metrics (tests/test_evaluate.py, issue 38): riskRegression::Score
# (Brier score and cumulative/dynamic AUC, IPCW with the Kaplan-Meier of the test set's
# censoring, cens.model = "km", influence-function standard errors, se.fit = TRUE; the
# integrated Brier score, summary = "ibs") and survival::concordance (Harrell: timewt =
# "n"; Uno: timewt = "n/G2"; standard errors sqrt(var)) of a Cox model fitted on a
# training part and evaluated on a test part; and the same estimates after refitting
# without each of a sample of training rows (R's refit-and-rescore).
#
# Usage: Rscript evaluate_reference.R DIR CASE [N_LOO]
# Reads DIR/CASE_data.csv (covariate columns, then time, event, split = "train"/"test";
#   a column `stratum`, if there, stratifies the Cox model: strata(stratum); with a
#   column `status` (0 censored, 1, 2 causes) instead of `event`: a Fine-Gray model,
#   cmprsk::crr for cause 1, and Score's competing-risk Brier score and AUC of its
#   predict.crr cumulative incidence; quantities risk, coef, brier(_se), auc(_se),
#   ibs(_se) only)
#   and DIR/CASE_times.csv (one column t).
# Writes DIR/CASE_reference.csv, long format: quantity, row, time, value. Quantities:
#   risk (1 - S(t|x) of test patient `row` at `time`: survfit(fit, newdata) read at the
#     times, the risks handed to Score as a matrix);
#   lp (predict(fit, newdata = test, type = "lp"), centred as R centres it);
#   brier, brier_se, auc, auc_se (Score's $Brier$score and $AUC$score at `time`);
#   ibs (Score's IBS column at the last time), ibs_se (sqrt(w' V w) with Score's
#     keep = "vcov" covariance of the Brier scores and w the IBS's rectangle weights);
#   c_harrell, c_harrell_se, c_uno, c_uno_se (concordance(fit, newdata = test, timewt),
#     se = sqrt(var));
#   aft_brier, aft_brier_se, aft_auc, aft_auc_se, aft_c_harrell(_se), aft_c_uno(_se):
#     the same for a Weibull survreg fit (risk psurvreg(t, lp, scale));
#   loo_<metric> (row = the 0-based position of the deleted row among the training
#     rows): the estimate after refitting without that row (coxph, Efron ties).
suppressPackageStartupMessages({library(survival); library(riskRegression)})
args <- commandArgs(trailingOnly = TRUE)
dir <- args[1]
case <- args[2]
n_loo <- if (length(args) >= 3) as.integer(args[3]) else 10L
d <- read.csv(file.path(dir, paste0(case, "_data.csv")))
times <- read.csv(file.path(dir, paste0(case, "_times.csv")))$t
if ("status" %in% names(d)) {
  # competing risks: a Fine-Gray model (cmprsk::crr) for cause 1, its predict.crr read
  # at the times (the last failure time <= t, 0 before the first), scored by
  # Score(Hist(time, status) ~ 1, cause = 1)
  suppressPackageStartupMessages(library(cmprsk))
  covs <- setdiff(names(d), c("time", "status", "split"))
  train <- d[d$split == "train", ]
  test <- d[d$split == "test", ]
  fit <- crr(train$time, train$status, cov1 = as.matrix(train[, covs]), failcode = 1,
             cencode = 0)
  pr <- predict(fit, cov1 = as.matrix(test[, covs]))
  at <- findInterval(times, pr[, 1])
  risk <- t(sapply(seq_len(nrow(test)), function(i) c(0, pr[, i + 1])[at + 1]))
  sc <- Score(list(fg = risk), formula = Hist(time, status) ~ 1, data = test, cause = 1,
              times = times, metrics = c("brier", "auc"), cens.model = "km", se.fit = TRUE,
              null.model = FALSE, summary = "ibs", keep = "vcov", conservative = FALSE)
  br <- sc$Brier$score[order(sc$Brier$score$times)]
  au <- sc$AUC$score[order(sc$AUC$score$times)]
  V <- as.matrix(sc$Brier$vcov)
  V[lower.tri(V)] <- t(V)[lower.tri(V)]
  w <- c(diff(c(0, times))[-1], 0) / max(times)
  out <- rbind(
    data.frame(quantity = "risk", row = rep(seq_len(nrow(test)) - 1L, length(times)),
               time = rep(times, each = nrow(test)), value = as.vector(risk)),
    data.frame(quantity = "coef", row = seq_along(covs) - 1L, time = NA, value = fit$coef),
    data.frame(quantity = "brier", row = NA, time = times, value = br$Brier),
    data.frame(quantity = "brier_se", row = NA, time = times, value = br$se),
    data.frame(quantity = "auc", row = NA, time = times, value = au$AUC),
    data.frame(quantity = "auc_se", row = NA, time = times, value = au$se),
    data.frame(quantity = "ibs", row = NA, time = max(times), value = br$IBS[nrow(br)]),
    data.frame(quantity = "ibs_se", row = NA, time = max(times),
               value = sqrt(drop(t(w) %*% V %*% w))))
  write.csv(out, file.path(dir, paste0(case, "_reference.csv")), row.names = FALSE)
  quit(save = "no")
}
covs <- setdiff(names(d), c("time", "event", "split", "stratum"))
keep <- intersect(c(covs, "stratum", "time", "event"), names(d))
train <- d[d$split == "train", keep]
test <- d[d$split == "test", keep]
rhs <- paste(c(covs, if ("stratum" %in% names(d)) "strata(stratum)"), collapse = " + ")
form <- as.formula(paste("Surv(time, event) ~", rhs))
aft_form <- as.formula(paste("Surv(time, event) ~", paste(covs, collapse = " + ")))
rows <- list()
emit <- function(quantity, row, time, value) {
  rows[[length(rows) + 1]] <<- data.frame(quantity = quantity, row = row, time = time,
                                          value = value)
}
# left rectangles from 0 (Brier 0 there) to the last time: Score's IBS at that time
ibs_weights <- function(times) c(diff(c(0, times))[-1], 0) / max(times)

metrics <- function(fit, with_se) {
  sf <- summary(survfit(fit, newdata = test), times = times, extend = TRUE)
  risk <- 1 - t(matrix(sf$surv, nrow = length(times)))
  sc <- Score(list(cox = risk), formula = Surv(time, event) ~ 1, data = test,
              times = times, metrics = c("brier", "auc"), cens.model = "km",
              se.fit = with_se, null.model = FALSE, summary = "ibs",
              keep = if (with_se) "vcov" else NULL, conservative = FALSE)
  br <- sc$Brier$score[order(sc$Brier$score$times)]
  au <- sc$AUC$score[order(sc$AUC$score$times)]
  ch <- concordance(fit, newdata = test, timewt = "n")
  cu <- concordance(fit, newdata = test, timewt = "n/G2")
  out <- list(risk = risk, brier = br$Brier, auc = au$AUC, ibs = br$IBS[nrow(br)],
              c_harrell = ch$concordance, c_uno = cu$concordance)
  if (with_se) {
    w <- ibs_weights(times)
    V <- as.matrix(sc$Brier$vcov)   # getVcov fills the upper triangle: cov(IF_j, IF_k) / N
    V[lower.tri(V)] <- t(V)[lower.tri(V)]
    out$brier_se <- br$se
    out$auc_se <- au$se
    out$ibs_se <- sqrt(drop(t(w) %*% V %*% w))
    out$c_harrell_se <- sqrt(ch$var)
    out$c_uno_se <- sqrt(cu$var)
  }
  out
}

fit <- coxph(form, data = train, ties = "efron")
m <- metrics(fit, TRUE)
for (j in seq_along(times)) emit("risk", seq_len(nrow(test)) - 1L, times[j], m$risk[, j])
emit("lp", seq_len(nrow(test)) - 1L, NA, predict(fit, newdata = test, type = "lp"))
for (q in c("brier", "brier_se", "auc", "auc_se")) emit(q, NA, times, m[[q]])
for (q in c("ibs", "ibs_se")) emit(q, NA, max(times), m[[q]])
for (q in c("c_harrell", "c_harrell_se", "c_uno", "c_uno_se")) emit(q, NA, NA, m[[q]])

# a Weibull AFT model (survreg; without the strata): Score on 1 - S(t|x) = psurvreg(t, lp, scale), and
# concordance(fit, newdata) on survreg's linear predictor
aft <- survreg(aft_form, data = train, dist = "weibull")
lp_aft <- predict(aft, newdata = test, type = "lp")
risk_aft <- sapply(times, function(t) psurvreg(t, lp_aft, aft$scale, "weibull"))
sa <- Score(list(aft = risk_aft), formula = Surv(time, event) ~ 1, data = test,
            times = times, metrics = c("brier", "auc"), cens.model = "km", se.fit = TRUE,
            null.model = FALSE, conservative = FALSE)
ba <- sa$Brier$score[order(sa$Brier$score$times)]
aa <- sa$AUC$score[order(sa$AUC$score$times)]
emit("aft_brier", NA, times, ba$Brier)
emit("aft_brier_se", NA, times, ba$se)
emit("aft_auc", NA, times, aa$AUC)
emit("aft_auc_se", NA, times, aa$se)
for (tw in c("n", "n/G2")) {
  ca <- concordance(aft, newdata = test, timewt = tw)
  q <- if (tw == "n") "aft_c_harrell" else "aft_c_uno"
  emit(q, NA, NA, ca$concordance)
  emit(paste0(q, "_se"), NA, NA, sqrt(ca$var))
}

# refit-and-rescore without a sample of training rows (evenly spread)
ntr <- nrow(train)
sample_rows <- unique(round(seq(1, ntr, length.out = min(n_loo, ntr))))
for (i in sample_rows) {
  fi <- coxph(form, data = train[-i, ], ties = "efron",
              control = coxph.control(eps = 1e-12, toler.chol = 1e-15, iter.max = 50))
  mi <- metrics(fi, FALSE)
  emit("loo_brier", i - 1L, times, mi$brier)
  emit("loo_auc", i - 1L, times, mi$auc)
  emit("loo_ibs", i - 1L, max(times), mi$ibs)
  emit("loo_c_harrell", i - 1L, NA, mi$c_harrell)
  emit("loo_c_uno", i - 1L, NA, mi$c_uno)
}
out <- do.call(rbind, rows)
write.csv(out, file.path(dir, paste0(case, "_reference.csv")), row.names = FALSE)
