# Reference numbers from R's cmprsk::crr (and survival::finegray + coxph) for the Fine-Gray
# tests (tests/test_fine_gray.py).
#
# Usage: Rscript fine_gray_reference.R OUTDIR [SEED] [N_SIM]
# Writes into OUTDIR:
#   data_pbc.csv: R's survival::pbc, time, status (0 censored, 1 transplant, 2 death), age,
#     logbili = log(bili), albumin, edema (no NA in these columns: all 418 rows);
#   data_mgus2.csv: survival::mgus2 with etime = ifelse(pstat == 0, futime, ptime), event =
#     ifelse(pstat == 0, 2 * death, 1) (1 progression, 2 death), age, male (sex == "M"),
#     hgb, creat, mspike; rows with NA in them dropped;
#   data_sim.csv: a simulated design (SEED, N_SIM rows, default 200): times rounded to
#     tenths (many ties, also between causes and censorings), status 0..3, two censoring
#     groups cg (1, 2) with different censoring, x1 normal, x2 binary, x3 uniform;
#   data_simc.csv: the same subjects with the times not rounded (no ties);
#   cases.csv: case, dataset, cause, covariates ("+"-joined), cengroup (column or "");
#   reference.csv, long format case, quantity, row, col, value. Quantities: coef, loglik
#     (crr's fit$loglik), var (fit$var, the sandwich), inf (fit$inf, the information),
#     loo_rows (0-based rows of the data file) and loo (crr refitted without each of them:
#     crr re-estimates the censoring Kaplan-Meier itself), fg_breslow and fg_efron
#     (survival::finegray + coxph(weights = fgwt) coefficients, ties "breslow"/"efron";
#     censoring groups as strata() in finegray's formula). finegray's censoring
#     Kaplan-Meier counts a failure tied with a censoring as before it (not at risk at the
#     censoring time; crr counts it at risk), and with strata() it expands each stratum
#     apart: its coefficients equal crr's only without such ties and without cengroup
#     (the case simc).
# Every crr fit runs to gtol = 1e-13 (its default 1e-6 stops early), then up to three Newton
# steps on crr's own score and information until the step is below 1e-12 (relative): crr's
# line search stops at the loss's rounding level, and on mgus2's refits left steps of 8e-8.
suppressPackageStartupMessages({library(survival); library(cmprsk)})
args <- commandArgs(trailingOnly = TRUE)
outdir <- args[1]
seed <- if (length(args) >= 2) as.integer(args[2]) else 20260125L
n_sim <- if (length(args) >= 3) as.integer(args[3]) else 200L
set.seed(seed)
dir.create(outdir, showWarnings = FALSE, recursive = TRUE)

pbc2 <- data.frame(time = pbc$time, status = pbc$status, age = pbc$age,
                   logbili = log(pbc$bili), albumin = pbc$albumin, edema = pbc$edema)
mg <- data.frame(etime = ifelse(mgus2$pstat == 0, mgus2$futime, mgus2$ptime),
                 event = ifelse(mgus2$pstat == 0, 2 * mgus2$death, 1),
                 age = mgus2$age, male = as.numeric(mgus2$sex == "M"), hgb = mgus2$hgb,
                 creat = mgus2$creat, mspike = mgus2$mspike)
mg <- na.omit(mg)
rownames(mg) <- NULL
here <- dirname(normalizePath(sub("^--file=", "",
                                  grep("^--file=", commandArgs(FALSE), value = TRUE)[1])))
source(file.path(here, "fine_gray_sim.R"))
drawn <- fine_gray_sim(n_sim)
sim <- drawn$sim
simc <- sim
simc$time <- drawn$tt    # the same design in continuous time: no ties at all

write.csv(pbc2, file.path(outdir, "data_pbc.csv"), row.names = FALSE)
write.csv(mg, file.path(outdir, "data_mgus2.csv"), row.names = FALSE)
write.csv(sim, file.path(outdir, "data_sim.csv"), row.names = FALSE)
write.csv(simc, file.path(outdir, "data_simc.csv"), row.names = FALSE)

cases <- data.frame(
  case = c("pbc_death", "pbc_transplant", "mgus2_progression", "sim_cengroup", "sim_cause2",
           "simc"),
  dataset = c("pbc", "pbc", "mgus2", "sim", "sim", "simc"),
  time = c("time", "time", "etime", "time", "time", "time"),
  status = c("status", "status", "event", "status", "status", "status"),
  cause = c(2, 1, 1, 1, 2, 1),
  covariates = c(rep("age+logbili+albumin+edema", 2), "age+male+hgb+creat+mspike",
                 rep("x1+x2+x3", 3)),
  cengroup = c("", "", "", "cg", "", ""),
  stringsAsFactors = FALSE)
write.csv(cases, file.path(outdir, "cases.csv"), row.names = FALSE)
datasets <- list(pbc = pbc2, mgus2 = mg, sim = sim, simc = simc)

rows <- list()
put <- function(case, quantity, m) {
  m <- as.matrix(m)
  rows[[length(rows) + 1]] <<- data.frame(case = case, quantity = quantity,
                                          row = as.vector(row(m)) - 1,
                                          col = as.vector(col(m)) - 1, value = as.vector(m))
}
fit_crr <- function(d, cs, keep = seq_len(nrow(d))) {
  covs <- strsplit(cs$covariates, "+", fixed = TRUE)[[1]]
  X <- as.matrix(d[keep, covs, drop = FALSE])
  args <- list(ftime = d[[cs$time]][keep], fstatus = d[[cs$status]][keep], cov1 = X,
               failcode = cs$cause, cencode = 0, gtol = 1e-13, maxiter = 100)
  if (cs$cengroup != "") args$cengroup <- d[[cs$cengroup]][keep]
  f <- do.call(crr, args)
  # crr's line search stops (converged = FALSE) where the loss no longer decreases at its
  # rounding level, which at gtol = 1e-13 leaves Newton steps up to 8e-8 (mgus2 refits):
  # polish with Newton steps on crr's own score and information (crr with init = and
  # maxiter = 0 evaluates them at init)
  for (polish in 1:3) {
    step <- solve(f$inf, f$score)
    if (max(abs(step)) <= 1e-12 * max(1, abs(f$coef))) break
    args$init <- f$coef + step
    args$maxiter <- 0
    f <- do.call(crr, args)
  }
  step <- solve(f$inf, f$score)
  if (max(abs(step)) > 1e-10 * max(1, abs(f$coef))) stop(paste("crr did not converge:", cs$case))
  f
}

for (k in seq_len(nrow(cases))) {
  cs <- cases[k, ]
  d <- datasets[[cs$dataset]]
  f <- fit_crr(d, cs)
  put(cs$case, "coef", t(f$coef))
  put(cs$case, "loglik", f$loglik)
  put(cs$case, "var", f$var)
  put(cs$case, "inf", f$inf)
  st <- d[[cs$status]]
  pick <- function(m, k) { w <- which(m); if (length(w) <= k) w else sample(w, k) }
  loo <- sort(unique(c(pick(st == cs$cause, 3), pick(st != cs$cause & st > 0, 3),
                       pick(st == 0, 3), which.max(d[[cs$time]]))))
  put(cs$case, "loo_rows", t(loo - 1))
  put(cs$case, "loo", t(sapply(loo, function(i) fit_crr(d, cs, keep = -i)$coef)))
  covs <- strsplit(cs$covariates, "+", fixed = TRUE)[[1]]
  dd <- data.frame(ftime = d[[cs$time]], fstatus = factor(d[[cs$status]]),
                   d[, covs, drop = FALSE])
  rhs <- paste(covs, collapse = " + ")
  if (cs$cengroup != "") { dd$cg <- d[[cs$cengroup]]; rhs <- paste(rhs, "+ strata(cg)") }
  fg <- finegray(as.formula(paste("Surv(ftime, fstatus) ~", rhs)), data = dd,
                 etype = as.character(cs$cause))
  fml <- as.formula(paste("Surv(fgstart, fgstop, fgstatus) ~", paste(covs, collapse = "+")))
  ctl <- coxph.control(eps = 1e-13, iter.max = 100, toler.chol = 1e-15)
  put(cs$case, "fg_breslow", t(coef(coxph(fml, data = fg, weights = fgwt, ties = "breslow",
                                          control = ctl))))
  put(cs$case, "fg_efron", t(coef(coxph(fml, data = fg, weights = fgwt, ties = "efron",
                                        control = ctl))))
}
write.csv(do.call(rbind, rows), file.path(outdir, "reference.csv"), row.names = FALSE)
