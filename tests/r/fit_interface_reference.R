# Reference numbers from R for the common fit interface (tests/test_fit_interface.py,
# issue 35 item 1): confint(), AIC(), summary()'s confidence limits of exp(coef), of
# survival's coxph and survreg and of cmprsk's crr.
#
# Usage: Rscript fit_interface_reference.R OUTDIR [SEED]
# Writes into OUTDIR:
#   data_lung.csv: R's lung, rows with NA in the columns used dropped, status - 1, case
#     weights w (seeded), a delayed entry time entry (seeded: a third of the rows enter
#     late, uniformly before their time);
#   data_mgus2.csv: R's mgus2 as a competing-risks data set: etime (time to progression,
#     else to death or censoring), event (0 censored, 1 progression, 2 death), age, male,
#     hgb (rows with NA dropped);
#   cases.csv: case, model (cox, aft, crr), covariates ("+"-joined), weights, strata,
#     cluster, robust (TRUE: the variance is the sandwich, per cluster or else per row),
#     entry (TRUE/FALSE), ties, dist;
#   reference.csv: case, quantity, name, value. Quantities, per parameter (name):
#     coef, se (sqrt(diag(vcov(fit))): the robust SE for a robust fit, crr's sandwich),
#     lower / upper (confint(fit), level 0.95), lower90 / upper90 (confint(fit, level =
#     0.9); crr, which has no confint: the logs of summary(fit)'s limits), exp_lower /
#     exp_upper (summary(fit)$conf.int: coxph's "lower .95" and "upper .95", crr's "2.5%"
#     and "97.5%"), exp_minus (its "exp(-coef)"); per fit (name ""): loglik (fit$loglik[2];
#     crr's fit$loglik), aic (AIC(fit); not for crr, which defines none), nevent (coxph's
#     fit$nevent; crr: failures of the cause), n (rows).
suppressPackageStartupMessages({
  library(survival)
  library(cmprsk)
})
args <- commandArgs(trailingOnly = TRUE)
outdir <- args[1]
seed <- if (length(args) >= 2) as.integer(args[2]) else 20260127L
set.seed(seed)
dir.create(outdir, showWarnings = FALSE, recursive = TRUE)

lung2 <- na.omit(lung[, c("inst", "time", "status", "age", "sex", "ph.ecog")])
lung2$status <- lung2$status - 1
rownames(lung2) <- NULL
lung2$w <- round(runif(nrow(lung2), 0.5, 2.5), 3)
late <- runif(nrow(lung2)) < 1 / 3
lung2$entry <- ifelse(late, round(lung2$time * runif(nrow(lung2), 0.05, 0.9), 2), 0)
lung2$entry <- pmin(lung2$entry, lung2$time - 0.5)
lung2$entry[lung2$entry < 0] <- 0
write.csv(lung2, file.path(outdir, "data_lung.csv"), row.names = FALSE)

m <- na.omit(mgus2[, c("age", "sex", "hgb", "ptime", "pstat", "futime", "death")])
mg <- data.frame(etime = ifelse(m$pstat == 0, m$futime, m$ptime),
                 event = ifelse(m$pstat == 0, 2 * m$death, 1),
                 age = m$age, male = as.numeric(m$sex == "M"), hgb = m$hgb)
write.csv(mg, file.path(outdir, "data_mgus2.csv"), row.names = FALSE)

cases <- list()
rows <- list()
put <- function(case, quantity, name, value) {
  rows[[length(rows) + 1]] <<- data.frame(case = case, quantity = quantity, name = name,
                                          value = as.numeric(value))
}
per_parameter <- function(case, names, values, quantity) {
  for (k in seq_along(names)) put(case, quantity, names[k], values[k])
}
add_case <- function(case, model, covariates, weights = FALSE, strata = "", cluster = "",
                     entry = FALSE, ties = "", dist = "", robust = cluster != "") {
  cases[[length(cases) + 1]] <<- data.frame(case = case, model = model,
                                            covariates = paste(covariates, collapse = "+"),
                                            weights = weights, strata = strata,
                                            cluster = cluster, robust = robust,
                                            entry = entry, ties = ties, dist = dist)
}

# ------------------------------------------------------------------------ coxph
cox_case <- function(case, covariates, weights = FALSE, strata = "", cluster = "",
                     entry = FALSE, ties = "efron", robust = cluster != "") {
  rhs <- paste(covariates, collapse = " + ")
  if (strata != "") rhs <- paste0(rhs, " + strata(", strata, ")")
  lhs <- if (entry) "Surv(entry, time, status)" else "Surv(time, status)"
  f <- as.formula(paste(lhs, "~", rhs))
  ctl <- coxph.control(eps = 1e-12, toler.chol = 1e-15, iter.max = 100)
  args <- list(formula = f, data = lung2, ties = ties, control = ctl)
  if (weights) args$weights <- lung2$w
  if (cluster != "") args$cluster <- lung2[[cluster]]
  # R makes the variance robust by default for non-integer case weights (one unit per
  # row); robust = FALSE asks for the model-based one, robust = TRUE for the sandwich
  args$robust <- robust
  fit <- do.call(coxph, args)
  nm <- names(coef(fit))
  per_parameter(case, nm, coef(fit), "coef")
  per_parameter(case, nm, sqrt(diag(vcov(fit))), "se")
  ci <- confint(fit)
  per_parameter(case, nm, ci[, 1], "lower")
  per_parameter(case, nm, ci[, 2], "upper")
  ci90 <- confint(fit, level = 0.9)
  per_parameter(case, nm, ci90[, 1], "lower90")
  per_parameter(case, nm, ci90[, 2], "upper90")
  s <- summary(fit)$conf.int
  per_parameter(case, nm, s[, "lower .95"], "exp_lower")
  per_parameter(case, nm, s[, "upper .95"], "exp_upper")
  per_parameter(case, nm, s[, "exp(-coef)"], "exp_minus")
  put(case, "loglik", "", fit$loglik[2])
  put(case, "aic", "", AIC(fit))
  put(case, "nevent", "", fit$nevent)
  put(case, "n", "", fit$n)
  add_case(case, "cox", covariates, weights, strata, cluster, entry, ties, robust = robust)
}
cox_case("cox_efron", c("age", "sex", "ph.ecog"))
cox_case("cox_breslow_weights_strata", c("age", "ph.ecog"), weights = TRUE, strata = "sex",
         ties = "breslow")
cox_case("cox_weights_robust_rows", c("age", "sex", "ph.ecog"), weights = TRUE,
         robust = TRUE)
cox_case("cox_cluster", c("age", "sex", "ph.ecog"), cluster = "inst")
cox_case("cox_entry", c("age", "sex", "ph.ecog"), entry = TRUE)

# ---------------------------------------------------------------------- survreg
aft_case <- function(case, covariates, dist, weights = FALSE, strata = "", cluster = "") {
  rhs <- paste(covariates, collapse = " + ")
  if (strata != "") rhs <- paste0(rhs, " + strata(", strata, ")")
  f <- as.formula(paste("Surv(time, status) ~", rhs))
  ctl <- survreg.control(rel.tolerance = 1e-13, toler.chol = 1e-15, maxiter = 200)
  args <- list(formula = f, data = lung2, dist = dist, control = ctl)
  if (weights) args$weights <- lung2$w
  if (cluster != "") {
    args$cluster <- lung2[[cluster]]
    args$robust <- TRUE
  }
  fit <- do.call(survreg, args)
  V <- vcov(fit)                    # every parameter, Log(scale) included
  nm <- colnames(V)
  full <- c(coef(fit), if (nrow(V) > length(coef(fit))) log(fit$scale))
  per_parameter(case, nm, full, "coef")
  per_parameter(case, nm, sqrt(diag(V)), "se")
  ci <- confint(fit)                # the coefficients only
  per_parameter(case, rownames(ci), ci[, 1], "lower")
  per_parameter(case, rownames(ci), ci[, 2], "upper")
  ci90 <- confint(fit, level = 0.9)
  per_parameter(case, rownames(ci90), ci90[, 1], "lower90")
  per_parameter(case, rownames(ci90), ci90[, 2], "upper90")
  put(case, "loglik", "", fit$loglik[2])
  put(case, "aic", "", AIC(fit))
  put(case, "nevent", "", sum(lung2$status))
  put(case, "n", "", nrow(lung2))
  add_case(case, "aft", covariates, weights, strata, cluster, dist = dist)
}
aft_case("aft_weibull", c("age", "sex", "ph.ecog"), "weibull")
aft_case("aft_exponential", c("age", "sex", "ph.ecog"), "exponential")
aft_case("aft_lognormal_weights_strata", c("age", "ph.ecog"), "lognormal", weights = TRUE,
         strata = "sex")
aft_case("aft_loglogistic_cluster", c("age", "sex", "ph.ecog"), "loglogistic",
         cluster = "inst")

# -------------------------------------------------------------------------- crr
crr_case <- function(case, covariates) {
  X <- as.matrix(mg[, covariates])
  args <- list(ftime = mg$etime, fstatus = mg$event, cov1 = X, failcode = 1, cencode = 0,
               gtol = 1e-13, maxiter = 100)
  fit <- do.call(crr, args)
  # crr's line search stops at the loss's rounding level, short of the maximum (steps of
  # 1e-8 left on mgus2): Newton steps on crr's own score and information (crr with init =
  # and maxiter = 0 evaluates them, and the sandwich, at init), as fine_gray_reference.R
  for (polish in 1:3) {
    step <- solve(fit$inf, fit$score)
    if (max(abs(step)) <= 1e-12 * max(1, abs(fit$coef))) break
    args$init <- fit$coef + step
    args$maxiter <- 0
    fit <- do.call(crr, args)
  }
  step <- solve(fit$inf, fit$score)
  if (max(abs(step)) > 1e-10 * max(1, abs(fit$coef))) stop(paste("crr did not converge:", case))
  nm <- covariates
  per_parameter(case, nm, fit$coef, "coef")
  per_parameter(case, nm, sqrt(diag(fit$var)), "se")
  s <- summary(fit)                 # conf.level 0.95, crr's sandwich
  per_parameter(case, nm, s$conf.int[, "2.5%"], "exp_lower")
  per_parameter(case, nm, s$conf.int[, "97.5%"], "exp_upper")
  per_parameter(case, nm, s$conf.int[, "exp(-coef)"], "exp_minus")
  per_parameter(case, nm, log(s$conf.int[, "2.5%"]), "lower")      # crr has no confint
  per_parameter(case, nm, log(s$conf.int[, "97.5%"]), "upper")
  s90 <- summary(fit, conf.int = 0.9)
  per_parameter(case, nm, log(s90$conf.int[, 3]), "lower90")
  per_parameter(case, nm, log(s90$conf.int[, 4]), "upper90")
  put(case, "loglik", "", fit$loglik)
  put(case, "nevent", "", sum(mg$event == 1))
  put(case, "n", "", nrow(mg))
  add_case(case, "crr", covariates)
}
crr_case("crr_mgus2", c("age", "male", "hgb"))

write.csv(do.call(rbind, cases), file.path(outdir, "cases.csv"), row.names = FALSE)
out <- do.call(rbind, rows)
write.csv(out, file.path(outdir, "reference.csv"), row.names = FALSE)
cat(sprintf("wrote %d cases, %d numbers into %s\n", length(cases), nrow(out), outdir))
