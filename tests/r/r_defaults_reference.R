# Reference numbers from R for R's defaults where R is the reference (tests/test_r_defaults.py,
# issue 44 item 4): coxph's robust variance for non-integer case weights, and dfbetas
# scaled by the naive (model-based) SE for every fit, clustered and robust ones included.
#
# Usage: Rscript r_defaults_reference.R OUTDIR [SEED]
# Writes into OUTDIR:
#   data_lung.csv: R's lung, rows with NA in the columns used dropped, status - 1, case
#     weights w (non-integer, seeded, 0.5 to 3) and w_int (integers 1 to 3, seeded);
#   cases.csv: case, model (cox, aft), covariates ("+"-joined), weights ("", "w" or
#     "w_int"), strata, cluster, robust_arg ("" = R's default, "FALSE", "TRUE"), ties,
#     dist, robust (TRUE when R's fit reports the robust variance: fit$naive.var is set),
#     columns (colnames(summary(fit)$coefficients), ";"-joined: the summary's words);
#   reference.csv: case, quantity, name, value. Per coefficient (name): coef, se
#     (sqrt(diag(vcov(fit))): what R reports), naive_se (sqrt(diag(fit$naive.var)), else
#     of fit$var), z and p (summary(fit)$coefficients' z and Pr(>|z|)), lower / upper
#     (confint(fit)), exp_lower / exp_upper (summary(fit)$conf.int's lower .95 / upper .95);
#   residuals.csv: case, quantity (dfbeta, dfbetas), unit, name, value: R's
#     residuals(fit, type) per row (unit = the row, 1-based) or, for a clustered fit,
#     collapsed per cluster (unit = the cluster label); weighted as R's default.
suppressPackageStartupMessages(library(survival))
args <- commandArgs(trailingOnly = TRUE)
outdir <- args[1]
seed <- if (length(args) >= 2) as.integer(args[2]) else 20260311L
set.seed(seed)
dir.create(outdir, showWarnings = FALSE, recursive = TRUE)

lung2 <- na.omit(lung[, c("inst", "time", "status", "age", "sex", "ph.ecog")])
lung2$status <- lung2$status - 1
rownames(lung2) <- NULL
lung2$w <- round(runif(nrow(lung2), 0.5, 3), 3)
lung2$w_int <- sample(1:3, nrow(lung2), replace = TRUE)
write.csv(lung2, file.path(outdir, "data_lung.csv"), row.names = FALSE)

cases <- list()
rows <- list()
res_rows <- list()
put <- function(case, quantity, names, values) {
  rows[[length(rows) + 1]] <<- data.frame(case = case, quantity = quantity, name = names,
                                          value = as.numeric(values))
}
put_matrix <- function(case, quantity, m, units) {
  m <- as.matrix(m)
  for (j in seq_len(ncol(m))) {
    res_rows[[length(res_rows) + 1]] <<- data.frame(case = case, quantity = quantity,
                                                    unit = as.character(units),
                                                    name = colnames(m)[j], value = m[, j])
  }
}

the_fit <- function(model, covariates, weights, strata, cluster, robust_arg, ties, dist) {
  rhs <- paste(covariates, collapse = " + ")
  if (strata != "") rhs <- paste0(rhs, " + strata(", strata, ")")
  f <- as.formula(paste("Surv(time, status) ~", rhs))
  a <- list(formula = f, data = lung2)
  if (model == "cox") {
    a$ties <- ties
    a$control <- coxph.control(eps = 1e-12, toler.chol = 1e-15, iter.max = 100)
  } else {
    a$dist <- dist
    a$control <- survreg.control(rel.tolerance = 1e-13, toler.chol = 1e-15, maxiter = 200)
  }
  if (weights != "") a$weights <- lung2[[weights]]
  if (cluster != "") a$cluster <- lung2[[cluster]]
  if (robust_arg != "") a$robust <- as.logical(robust_arg)
  do.call(if (model == "cox") coxph else survreg, a)
}

add_case <- function(case, model = "cox", covariates = c("age", "sex"), weights = "",
                     strata = "", cluster = "", robust_arg = "", ties = "efron",
                     dist = "") {
  fit <- the_fit(model, covariates, weights, strata, cluster, robust_arg, ties, dist)
  s <- summary(fit)
  tab <- if (model == "cox") s$coefficients else s$table
  nm <- names(coef(fit))
  V <- vcov(fit)[nm, nm, drop = FALSE]
  naive <- if (is.null(fit$naive.var)) fit$var else fit$naive.var
  naive <- as.matrix(naive)[seq_along(nm), seq_along(nm), drop = FALSE]
  put(case, "coef", nm, coef(fit))
  put(case, "se", nm, sqrt(diag(V)))
  put(case, "naive_se", nm, sqrt(diag(naive)))
  put(case, "z", nm, tab[nm, "z"])
  put(case, "p", nm, tab[nm, if (model == "cox") "Pr(>|z|)" else "p"])
  ci <- confint(fit)[nm, , drop = FALSE]
  put(case, "lower", nm, ci[, 1])
  put(case, "upper", nm, ci[, 2])
  if (model == "cox") {
    put(case, "exp_lower", nm, s$conf.int[nm, "lower .95"])
    put(case, "exp_upper", nm, s$conf.int[nm, "upper .95"])
  }
  # dfbeta and dfbetas: per row, or collapsed per cluster (R's residuals divide by the
  # naive SE, sqrt(diag(fit$naive.var)), for robust fits too)
  for (type in c("dfbeta", "dfbetas")) {
    if (cluster != "") {
      r <- residuals(fit, type = type, collapse = lung2[[cluster]])
      units <- rownames(as.matrix(r))
      if (is.null(units)) units <- sort(unique(lung2[[cluster]]))
    } else {
      r <- residuals(fit, type = type)
      units <- seq_len(nrow(lung2))
    }
    r <- as.matrix(r)
    colnames(r) <- colnames(vcov(fit))[seq_len(ncol(r))]
    put_matrix(case, type, r, units)
  }
  cases[[length(cases) + 1]] <<- data.frame(
    case = case, model = model, covariates = paste(covariates, collapse = "+"),
    weights = weights, strata = strata, cluster = cluster, robust_arg = robust_arg,
    ties = ties, dist = dist, robust = !is.null(fit$naive.var),
    columns = paste(colnames(tab), collapse = ";"))
}

# coxph: non-integer weights -> robust by default (one unit per row); integer weights ->
# model-based; robust = FALSE asks for the model-based one
add_case("cox_weights_fractional", weights = "w")
add_case("cox_weights_fractional_breslow_strata", covariates = c("age", "ph.ecog"),
         weights = "w", strata = "sex", ties = "breslow")
add_case("cox_weights_integer", weights = "w_int")
add_case("cox_weights_fractional_robust_false", weights = "w", robust_arg = "FALSE")
# clustered fits: dfbetas per cluster over the naive SE
add_case("cox_cluster", covariates = c("age", "sex", "ph.ecog"), cluster = "inst")
add_case("cox_cluster_weights_fractional", covariates = c("age", "sex", "ph.ecog"),
         weights = "w", cluster = "inst")
add_case("aft_weibull_cluster", model = "aft", covariates = c("age", "sex", "ph.ecog"),
         cluster = "inst", dist = "weibull")

write.csv(do.call(rbind, cases), file.path(outdir, "cases.csv"), row.names = FALSE)
write.csv(do.call(rbind, rows), file.path(outdir, "reference.csv"), row.names = FALSE)
write.csv(do.call(rbind, res_rows), file.path(outdir, "residuals.csv"), row.names = FALSE)
versions <- c(R = paste(R.version$major, R.version$minor, sep = "."),
              survival = as.character(packageVersion("survival")))
writeLines(paste(names(versions), versions), file.path(outdir, "VERSIONS.txt"))
cat(sprintf("wrote %d cases into %s\n", length(cases), outdir))
