# Reference concordances truncated at tau (tests/test_evaluate_tau.py, issue 46 item 2):
# survival::concordance(fit, newdata = test, ymax = tau, timewt = "n") (Harrell) and
# timewt = "n/G2" (Uno), estimate and standard error sqrt(var), of a Cox model fitted on the
# training part of a case of tests/fixtures/r_evaluate (stratified by `stratum` when the
# case has that column); and the same of the test set's linear predictor with case
# weights, concordance(Surv(time, event) ~ lp (+ strata(stratum)), weights = w,
# reverse = TRUE), the weights w = 1 + (row %% 3) / 2 (row: 0-based test row).
#
# Usage: Rscript evaluate_tau_reference.R SRC DIR CASE TAU...
# Reads SRC/CASE_data.csv (the layout of evaluate_reference.R); writes
# DIR/CASE_tau_reference.csv, long format: quantity, row, tau, value. Quantities: lp
#   (predict(fit, newdata = test, type = "lp"), row = test row); weight (w, row = test
#   row); c_harrell, c_harrell_se, c_uno, c_uno_se (the fit's, at `tau`; tau NA: no
#   ymax); w_c_harrell, w_c_harrell_se, w_c_uno, w_c_uno_se (weighted, of lp).
suppressPackageStartupMessages(library(survival))
args <- commandArgs(trailingOnly = TRUE)
src <- args[1]
dir <- args[2]
case <- args[3]
taus <- c(NA, as.numeric(args[-(1:3)]))
d <- read.csv(file.path(src, paste0(case, "_data.csv")))
covs <- setdiff(names(d), c("time", "event", "split", "stratum"))
keep <- intersect(c(covs, "stratum", "time", "event"), names(d))
train <- d[d$split == "train", keep]
test <- d[d$split == "test", keep]
strat <- "stratum" %in% names(d)
rhs <- paste(c(covs, if (strat) "strata(stratum)"), collapse = " + ")
fit <- coxph(as.formula(paste("Surv(time, event) ~", rhs)), data = train, ties = "efron")
test$lp <- predict(fit, newdata = test, type = "lp")
test$w <- 1 + ((seq_len(nrow(test)) - 1) %% 3) / 2
wform <- as.formula(paste("Surv(time, event) ~ lp", if (strat) "+ strata(stratum)"))
rows <- list(data.frame(quantity = "lp", row = seq_len(nrow(test)) - 1L, tau = NA,
                        value = test$lp),
             data.frame(quantity = "weight", row = seq_len(nrow(test)) - 1L, tau = NA,
                        value = test$w))
for (tau in taus) {
  ymax <- if (is.na(tau)) NULL else tau
  for (tw in c("n", "n/G2")) {
    q <- if (tw == "n") "c_harrell" else "c_uno"
    cf <- concordance(fit, newdata = test, timewt = tw, ymax = ymax)
    cw <- concordance(wform, data = test, weights = w, reverse = TRUE, timewt = tw,
                      ymax = ymax)
    rows[[length(rows) + 1]] <- data.frame(
      quantity = c(q, paste0(q, "_se"), paste0("w_", q), paste0("w_", q, "_se")),
      row = NA, tau = tau,
      value = c(cf$concordance, sqrt(cf$var), cw$concordance, sqrt(cw$var)))
  }
}
write.csv(do.call(rbind, rows), file.path(dir, paste0(case, "_tau_reference.csv")),
          row.names = FALSE)
