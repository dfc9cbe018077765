# Reference calibration frames (tests/test_calibration.py, issue 46 item 5):
# riskRegression::plotCalibration(Score(..., plots = "calibration"), plot = FALSE) of a
# Cox model (coxph, Efron) or a Fine-Gray model (cmprsk::crr, cause 1) fitted on the
# training part of tests/fixtures/r_evaluate/CASE_data.csv, at one time (the middle of
# CASE_times.csv), method = "quantile" (q = 10 and q = 4) and method = "nne" (the default
# cens.method = "local": prodlim's nearest-neighbour Kaplan-Meier / Aalen-Johansen at the
# risks rounded to 2 decimals, bandwidth by KernSmooth::dpik).
#
# Usage: Rscript calibration_reference.R DATA_DIR OUT_DIR CASE
# Writes OUT_DIR/CASE_calibration.csv, long format: frame, row, value with frames
#   risk (the test patients' predicted risk at the time, as handed to Score), time,
#   quantile10_pred, quantile10_obs, quantile4_pred, quantile4_obs, nne_pred, nne_obs,
#   nne_bandwidth.
suppressPackageStartupMessages({library(survival); library(riskRegression)})
args <- commandArgs(trailingOnly = TRUE)
d <- read.csv(file.path(args[1], paste0(args[3], "_data.csv")))
times <- read.csv(file.path(args[1], paste0(args[3], "_times.csv")))$t
tp <- times[ceiling(length(times) / 2)]
fg <- "status" %in% names(d)
covs <- setdiff(names(d), c("time", "event", "status", "split", "stratum"))
train <- d[d$split == "train", ]
test <- d[d$split == "test", ]
if (fg) {
  suppressPackageStartupMessages(library(cmprsk))
  fit <- crr(train$time, train$status, cov1 = as.matrix(train[, covs]), failcode = 1,
             cencode = 0)
  pr <- predict(fit, cov1 = as.matrix(test[, covs]))
  at <- findInterval(tp, pr[, 1])
  risk <- matrix(if (at == 0) rep(0, nrow(test)) else pr[at, -1], ncol = 1)
  sc <- Score(list(m = risk), formula = Hist(time, status) ~ 1, data = test, cause = 1,
              times = tp, metrics = "brier", plots = "calibration", null.model = FALSE,
              cens.model = "km")
} else {
  fit <- coxph(as.formula(paste("Surv(time, event) ~", paste(covs, collapse = " + "))),
               data = train, ties = "efron")
  sf <- summary(survfit(fit, newdata = test), times = tp, extend = TRUE)
  risk <- matrix(1 - sf$surv, ncol = 1)
  sc <- Score(list(m = risk), formula = Surv(time, event) ~ 1, data = test, times = tp,
              metrics = "brier", plots = "calibration", null.model = FALSE,
              cens.model = "km")
}
out <- list(data.frame(frame = "risk", row = seq_len(nrow(test)) - 1L, value = risk[, 1]),
            data.frame(frame = "time", row = 0L, value = tp))
for (q in c(10, 4)) {
  pc <- plotCalibration(sc, method = "quantile", q = q, plot = FALSE, cens.method = "local")
  f <- pc$plotFrames$m
  out[[length(out) + 1]] <- data.frame(frame = paste0("quantile", q, "_pred"),
                                       row = seq_len(nrow(f)) - 1L, value = f$Pred)
  out[[length(out) + 1]] <- data.frame(frame = paste0("quantile", q, "_obs"),
                                       row = seq_len(nrow(f)) - 1L, value = f$Obs)
}
pc <- plotCalibration(sc, method = "nne", plot = FALSE, cens.method = "local")
f <- pc$plotFrames$m
out[[length(out) + 1]] <- data.frame(frame = "nne_pred", row = seq_len(nrow(f)) - 1L,
                                     value = f$Pred)
out[[length(out) + 1]] <- data.frame(frame = "nne_obs", row = seq_len(nrow(f)) - 1L,
                                     value = f$Obs)
out[[length(out) + 1]] <- data.frame(frame = "nne_bandwidth", row = 0L,
                                     value = pc$bandwidth[[1]])
write.csv(do.call(rbind, out), file.path(args[2], paste0(args[3], "_calibration.csv")),
          row.names = FALSE)
