# Reference numbers from R's cmprsk::predict.crr for the cumulative incidence target
# (tests/test_cumulative_incidence.py).
#
# Usage: Rscript cumulative_incidence_reference.R DATADIR OUTDIR [SEED]
# Reads the Fine-Gray fixtures' data and cases (DATADIR: tests/fixtures/r_fine_gray, written
# by fine_gray_reference.R: data_*.csv, cases.csv) and writes into OUTDIR:
#   reference.csv, long format case, quantity, row, col, value. Quantities:
#     new_rows: 0-based rows of the data file whose covariates are new patients 1..3
#       (patient 4 is the covariates' column means, new_x holds all four: patients x
#       covariates);
#     uftime (crr's fit$uftime, the failure times of the cause) and cif (predict.crr(fit,
#       new_x)[, -1]: uftime x patients, F(t | x) = 1 - exp(-cumsum(bfitj) exp(x'b)));
#     times: times at which the step function is read (before the first failure time,
#       three quantiles of uftime, after the last), cif_at (patients x times: predict.crr's
#       value at the last uftime <= t, 0 before the first);
#     loo_rows (0-based rows) and loo_cif: crr refitted without each of them (crr
#       re-estimates the censoring Kaplan-Meier itself) and predict.crr of the refit read at
#       times (one row per deleted subject, patients x times flattened patient-major).
# Every crr fit runs to gtol = 1e-13 and is polished by Newton steps on crr's own score and
# information (fine_gray_reference.R's fit_crr).
suppressPackageStartupMessages({library(survival); library(cmprsk)})
args <- commandArgs(trailingOnly = TRUE)
datadir <- args[1]
outdir <- args[2]
seed <- if (length(args) >= 3) as.integer(args[3]) else 20260125L
set.seed(seed)
dir.create(outdir, showWarnings = FALSE, recursive = TRUE)

cases <- read.csv(file.path(datadir, "cases.csv"), stringsAsFactors = FALSE)
cases$cengroup[is.na(cases$cengroup)] <- ""
datasets <- list()
for (ds in unique(cases$dataset))
  datasets[[ds]] <- read.csv(file.path(datadir, paste0("data_", ds, ".csv")))

# crr's fit (fit_crr: gtol 1e-13 and Newton polishing) and the long-format writer (put) are
# fine_gray_reference.R's: their definitions are read from it, not copied
here <- dirname(normalizePath(sub("^--file=", "",
                                  grep("^--file=", commandArgs(FALSE), value = TRUE)[1])))
for (e in parse(file.path(here, "fine_gray_reference.R")))
  if (is.call(e) && identical(e[[1]], as.name("<-")) && is.name(e[[2]]) &&
      as.character(e[[2]]) %in% c("put", "fit_crr")) eval(e)
rows <- list()
# predict.crr's curves (uftime x patients) read at times: the last uftime <= t, 0 before
read_at <- function(p, times) {
  p <- unclass(p)
  k <- findInterval(times, p[, 1])
  curves <- rbind(0, p[, -1, drop = FALSE])
  t(curves[k + 1, , drop = FALSE])                 # patients x times
}

for (k in seq_len(nrow(cases))) {
  cs <- cases[k, ]
  d <- datasets[[cs$dataset]]
  covs <- strsplit(cs$covariates, "+", fixed = TRUE)[[1]]
  f <- fit_crr(d, cs)
  new_rows <- sort(sample(nrow(d), 3))
  new_x <- rbind(as.matrix(d[new_rows, covs]), colMeans(d[, covs]))
  p <- predict(f, new_x)
  put(cs$case, "new_rows", t(new_rows - 1))
  put(cs$case, "new_x", new_x)
  put(cs$case, "uftime", f$uftime)
  put(cs$case, "cif", unclass(p)[, -1])
  u <- f$uftime
  times <- c(min(u) / 2, quantile(u, c(0.1, 0.5, 0.9), type = 1, names = FALSE),
             max(u) + 1)
  put(cs$case, "times", t(times))
  put(cs$case, "cif_at", read_at(p, times))
  st <- d[[cs$status]]
  pick <- function(m, k) { w <- which(m); if (length(w) <= k) w else sample(w, k) }
  loo <- sort(unique(c(pick(st == cs$cause, 2), pick(st != cs$cause & st > 0, 2),
                       pick(st == 0, 2), which.max(d[[cs$time]]))))
  put(cs$case, "loo_rows", t(loo - 1))
  put(cs$case, "loo_cif", t(sapply(loo, function(i)
    as.vector(t(read_at(predict(fit_crr(d, cs, keep = -i), new_x), times))))))
}
write.csv(do.call(rbind, rows), file.path(outdir, "reference.csv"), row.names = FALSE)
