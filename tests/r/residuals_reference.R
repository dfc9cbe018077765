# Reference numbers from R's residuals.coxph and cox.zph (survival package) for
# tests/test_residuals_cox.py and tests/test_ph_test.py.
#
# Usage: Rscript residuals_reference.R OUTDIR [SEED]
# Writes into OUTDIR:
#   data_<name>.csv: R's data sets as fitted here (lung, veteran, pbc, heart, colon), every
#     covariate a numeric column (factors as 0/1 columns with R's names), status 0/1, case
#     weights w (seeded, 3 decimals) where a case uses them, strata as integer codes in R's
#     factor-level order (so that the stratum order of R's output is the codes' order);
#   cases.json: one entry per case: case, dataset, ties, covariates, weights (bool), strata
#     (column or ""), start (column or ""), id (column or ""), terms (term -> columns);
#   case_<case>.json.gz (gzip): coef, var (fit$var), residuals (every type of residuals.coxph, per row,
#     default weighting), weighted (martingale and score with weighted = TRUE), collapsed
#     (martingale, deviance, score, dfbeta, dfbetas summed per id, when the case has one),
#     schoenfeld_time / scaledsch_time (R's row names, the event times), zph (per transform
#     km, rank, identity, log: table (terms = TRUE), table_cols (terms = FALSE), x, time, y).
# Every fit converges to eps = 1e-14 so that the comparison is not limited by R's stopping rule.
suppressPackageStartupMessages({library(survival); library(jsonlite)})
args <- commandArgs(trailingOnly = TRUE)
outdir <- args[1]
seed <- if (length(args) >= 2) as.integer(args[2]) else 20261127L
set.seed(seed)
dir.create(outdir, showWarnings = FALSE, recursive = TRUE)
ctl <- coxph.control(eps = 1e-14, iter.max = 200, toler.chol = 1e-15)
w3 <- function(n) round(runif(n, 0.5, 2.5), 3)

lung2 <- na.omit(lung[, c("inst", "time", "status", "age", "sex", "ph.ecog", "wt.loss")])
lung2$status <- lung2$status - 1
lung2$w <- w3(nrow(lung2))
vet <- data.frame(time = veteran$time, status = veteran$status, karno = veteran$karno,
                  age = veteran$age, trt = veteran$trt, diagtime = veteran$diagtime,
                  celltype = as.integer(veteran$celltype), w = w3(nrow(veteran)))
pbc2 <- pbc[1:312, c("time", "status", "age", "edema", "bili", "albumin", "protime")]
pbc2$status <- as.numeric(pbc2$status == 2)
pbc2$logbili <- log(pbc2$bili)
pbc2$bili <- NULL
pbc2$w <- w3(nrow(pbc2))
hrt <- heart
hrt$transplant <- as.numeric(as.character(hrt$transplant))
hrt$w <- w3(max(hrt$id))[hrt$id]           # one weight per subject
col2 <- na.omit(colon[colon$etype == 2 & colon$id <= 400,
                      c("id", "time", "status", "rx", "sex", "age", "nodes", "obstruct")])
col2$rxLev <- as.numeric(col2$rx == "Lev")
col2$`rxLev+5FU` <- as.numeric(col2$rx == "Lev+5FU")
col2$rx <- NULL
col2$sex <- col2$sex + 1L
datasets <- list(lung = lung2, veteran = vet, pbc = pbc2, heart = hrt, colon = col2)
for (nm in names(datasets)) {
  rownames(datasets[[nm]]) <- NULL
  write.csv(datasets[[nm]], file.path(outdir, paste0("data_", nm, ".csv")), row.names = FALSE)
}

cases <- list()
add <- function(case, dataset, ties, covariates, weights = FALSE, strata = "", start = "",
                id = "", terms = NULL) {
  if (is.null(terms)) terms <- setNames(as.list(covariates), covariates)
  cases[[length(cases) + 1]] <<- list(case = case, dataset = dataset, ties = ties,
                                      covariates = covariates, weights = weights,
                                      strata = strata, start = start, id = id, terms = terms)
}
lc <- c("age", "sex", "ph.ecog", "wt.loss")
add("lung_efron", "lung", "efron", lc)
add("lung_breslow", "lung", "breslow", lc)
add("lung_w_efron", "lung", "efron", lc, weights = TRUE)
add("lung_strata_w_breslow", "lung", "breslow", c("age", "ph.ecog", "wt.loss"),
    weights = TRUE, strata = "sex")
vc <- c("karno", "age", "trt", "diagtime")
add("veteran_strata_efron", "veteran", "efron", vc, strata = "celltype")
add("veteran_strata_breslow", "veteran", "breslow", vc, strata = "celltype")
pc <- c("age", "edema", "logbili", "albumin", "protime")
add("pbc_w_efron", "pbc", "efron", pc, weights = TRUE)
add("pbc_breslow", "pbc", "breslow", pc)
hc <- c("age", "year", "surgery", "transplant")
add("heart_efron", "heart", "efron", hc, start = "start", id = "id")
add("heart_breslow", "heart", "breslow", hc, start = "start", id = "id")
add("heart_w_efron", "heart", "efron", hc, weights = TRUE, start = "start", id = "id")
cc <- c("rxLev", "rxLev+5FU", "age", "nodes", "obstruct")
add("colon_strata_efron", "colon", "efron", cc, strata = "sex", id = "id",
    terms = list(rx = c("rxLev", "rxLev+5FU"), age = "age", nodes = "nodes",
                 obstruct = "obstruct"))

types <- c("martingale", "deviance", "score", "schoenfeld", "dfbeta", "dfbetas",
           "scaledsch", "partial")
mat <- function(r) { r <- as.matrix(r); dimnames(r) <- NULL; r }
for (cs in cases) {
  d <- datasets[[cs$dataset]]
  y <- if (cs$start == "") Surv(d$time, d$status) else Surv(d[[cs$start]], d$stop, d$event)
  rhs <- paste(sprintf("`%s`", cs$covariates), collapse = " + ")
  if (cs$strata != "") rhs <- paste0(rhs, " + strata(`", cs$strata, "`)")
  d$y <- y
  fit <- coxph(as.formula(paste("y ~", rhs)), data = d, ties = cs$ties, control = ctl,
               weights = if (cs$weights) d$w else NULL)
  zfit <- fit
  if (cs$dataset == "colon") {
    # terms for the PH test's terms = TRUE: rx as one two-column term
    d$rx <- cbind(d$rxLev, d$`rxLev+5FU`)
    zfit <- coxph(y ~ rx + age + nodes + obstruct + strata(sex), data = d, ties = cs$ties,
                  control = ctl)
  }
  out <- list(case = cs$case, coef = unname(coef(fit)), var = mat(fit$var),
              loglik = fit$loglik[2], residuals = list(), weighted = list(),
              collapsed = list(), zph = list())
  for (tp in types) out$residuals[[tp]] <- mat(residuals(fit, type = tp))
  out$schoenfeld_time <- as.numeric(rownames(as.matrix(residuals(fit, "schoenfeld"))))
  out$weighted$martingale <- mat(residuals(fit, "martingale", weighted = TRUE))
  out$weighted$score <- mat(residuals(fit, "score", weighted = TRUE))
  out$weighted$schoenfeld <- mat(residuals(fit, "schoenfeld", weighted = TRUE))
  if (cs$id != "") {
    for (tp in c("martingale", "deviance", "score", "dfbeta", "dfbetas"))
      out$collapsed[[tp]] <- mat(residuals(fit, type = tp, collapse = d[[cs$id]]))
    out$collapsed_labels <- sort(unique(d[[cs$id]]))
  }
  for (tr in c("km", "rank", "identity", "log")) {
    z <- cox.zph(zfit, transform = tr)
    zc <- cox.zph(fit, transform = tr, terms = FALSE)
    out$zph[[tr]] <- list(table = unname(z$table), rows = rownames(z$table),
                          table_cols = unname(zc$table), x = z$x, time = z$time,
                          y = mat(zc$y))
  }
  con <- gzfile(file.path(outdir, paste0("case_", cs$case, ".json.gz")), "w")
  writeLines(toJSON(out, digits = NA, matrix = "rowmajor", auto_unbox = TRUE, na = "null"), con)
  close(con)
}
writeLines(toJSON(cases, auto_unbox = TRUE, pretty = TRUE), file.path(outdir, "cases.json"))
