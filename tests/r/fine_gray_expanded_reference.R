# Reference numbers for the Fine-Gray model with case weights, strata and Efron's ties
# (tests/test_fine_gray_expanded.py), from an implementation independent of ours and of
# cmprsk::crr: the data expanded explicitly into counting-process rows and fitted by
# survival::coxph (its risk-set sums, its weighted Efron).
#
# Usage: Rscript fine_gray_expanded_reference.R OUTDIR [SEED] [N_SIM]
#
# The model. status 0 censored, 1..K causes, one `cause` modelled. Weights w_i > 0 are
# frequency weights (in the risk sets, the failure counts and the censoring Kaplan-Meier).
# G_g(t-) is the left limit of the weighted Kaplan-Meier estimate of the censoring
# distribution of group g = (stratum, cengroup) (survfit(Surv(time, status == 0) ~ 1,
# weights = w) on the group: failures at s are at risk at s, crr's convention), read at the
# largest survfit time strictly below t (1 if none), and 0 for t after the group's last
# time (crr's rule). At a failure time t_k of the cause in stratum s the risk set holds
# every subject of s with time >= t_k (weight w_j) and every subject j of s that failed
# from another cause at T_j < t_k (weight w_j G_g(t_k-) / G_g(T_j-), g its group). Each
# stratum has its own risk sets; the loss is the sum over strata.
#
# The expansion. Each subject: a row (-1, T_j], weight w_j, status 1 iff it failed from the
# cause. Each competing subject j in addition: for every failure time t_k > T_j of the
# cause in its stratum a row (max(previous failure time of the stratum, T_j), t_k],
# status 0, weight w_j G_g(t_k-) / G_g(T_j-) (dropped where 0: after the group's last
# time). Then coxph(Surv(start, stop, status) ~ covariates + strata(stratum), weights =,
# ties =) to eps = 1e-13, followed by a check that the score test at the answer (coxph with
# init = the answer, iter.max = 0) is below 1e-20 (more Newton iterations otherwise).
# coxph's ties = "efron" with weights is the definition of weighted Efron: at a time with
# d tied failures (d counts rows, not weights) of total weight W and risk D = sum w_i e_i
# over them, the loss adds (W / d) sum_{r = 0}^{d - 1} log(S0 - r D / d): every tied
# failure gets the mean weight W / d. So integer weights are not duplicated rows under
# Efron (they are under Breslow); case sim_int_efron records both.
#
# Writes into OUTDIR:
#   data_sim.csv: the simulated design of tests/r/fine_gray_reference.R (same generator,
#     same SEED and N_SIM draw the same time, status, x1, x2, x3, cg: with the defaults
#     the rows of tests/fixtures/r_fine_gray/data_sim.csv), then drawn after them: w
#     (runif(0.5, 2) rounded to 3 decimals), wi (integer weights 1..3), st (stratum 1, 2);
#   data_pbc.csv: survival::pbc as in fine_gray_reference.R (time, status 0/1 transplant/
#     2 death, age, logbili, albumin, edema);
#   cases.csv: case, dataset, time, status, cause, covariates ("+"-joined), cengroup,
#     weights, strata (a column of the data file or ""), ties ("breslow"/"efron");
#   reference.csv, long format case, quantity, row, col, value. Quantities: coef; loglik
#     (coxph's fit$loglik[2], = crr-style log pseudo-likelihood = minus our loss);
#     information (solve(fit$var): coxph's naive information, the Hessian of the loss);
#     loo_rows (0-based rows of the data file) and loo (the coefficients refitted without
#     each: re-expanded with the Kaplan-Meier re-estimated without the subject);
#     sim_int_efron also coef_duplicated (coxph Efron on the data with each subject
#     repeated wi times, unit weights); eta (n_subjects x d; row = the subject's 0-based
#     row of the data file, col = covariate 0..d-1): the subject's score residual with the
#     censoring weights held fixed, per unit of its case weight, at coef:
#     eta_j = sum over the expanded rows r of j of (wt_r / w_j) * residuals(fit,
#     "score")[r] (1 for the subject's own row, G_g(t_k-) / G_g(T_j-) for an expanded one;
#     coxph's score residuals are unweighted, the derivative of the score in the row's
#     weight, Breslow and weighted Efron alike).
# The checks of eta (the script stops where one fails; the numbers go to stderr):
#   sum_j w_j eta_j is coxph.detail's score at coef and below 1e-8; it equals
#   residuals(fit, "score", collapse = id, weighted = TRUE) / w_j (weighted = TRUE
#   multiplies each row by its weight wt_r before the sum; the default weighted = FALSE
#   would drop the ratios G(t_k-) / G(T_j-)); for four subjects per case (two tied failures
#   of the cause, a competing failure, a censoring) it is d U / d w_j by central differences
#   of coxph.detail's score with the subject's rows scaled together; and for sim_unit_breslow
#   (with cmprsk installed), on its design with the censored subjects dropped (psi = 0),
#   crr's sandwich at the fit's coefficients is I^{-1} (sum_j eta_j eta_j') I^{-1}.
# The data are written first and read back, so the fits use exactly the numbers Python
# reads. The Breslow cases with integer weights are checked against the duplicated data
# (the script stops if they differ by more than 1e-9).
suppressPackageStartupMessages(library(survival))

CTL <- coxph.control(eps = 1e-13, iter.max = 100, toler.chol = 1e-15)

# G_g(t-) for the subjects `d` of one group at the times `at` (survfit, weighted)
censoring_left <- function(time, status, w, at) {
  km <- survfit(Surv(time, status == 0) ~ 1, weights = w)
  out <- vapply(at, function(t) {
    before <- which(km$time < t)
    if (length(before) == 0) 1 else km$surv[max(before)]
  }, numeric(1))
  out[at > max(time)] <- 0
  out
}

# the counting-process rows of the subjects (vectors, one entry per subject)
expand <- function(time, status, cause, X, w, stratum, cgroup) {
  n <- length(time)
  rows <- list(data.frame(id = seq_len(n), start = -1, stop = time,
                          event = as.integer(status == cause), wt = w, st = stratum))
  group <- interaction(stratum, cgroup, drop = TRUE)
  for (s in unique(stratum)) {
    fail <- sort(unique(time[stratum == s & status == cause]))
    for (g in unique(group[stratum == s])) {
      m <- which(group == g)
      comp <- m[status[m] != cause & status[m] != 0]
      if (length(comp) == 0) next
      G_fail <- censoring_left(time[m], status[m], w[m], fail)
      G_own <- censoring_left(time[m], status[m], w[m], time[comp])
      for (k in seq_along(comp)) {
        j <- comp[k]
        later <- which(fail > time[j])
        if (length(later) == 0) next
        prev <- c(-Inf, fail)[later]          # the failure time before each t_k
        r <- data.frame(id = j, start = pmax(prev, time[j]), stop = fail[later], event = 0L,
                        wt = w[j] * G_fail[later] / G_own[k], st = s)
        rows[[length(rows) + 1]] <- r[r$wt > 0, ]
      }
    }
  }
  e <- do.call(rbind, rows)
  cbind(e, X[e$id, , drop = FALSE])
}

fit_expanded <- function(d, cs, keep = seq_len(nrow(d)), init = NULL) {
  d <- d[keep, , drop = FALSE]
  covs <- strsplit(cs$covariates, "+", fixed = TRUE)[[1]]
  n <- nrow(d)
  w <- if (cs$weights != "") d[[cs$weights]] else rep(1, n)
  st <- if (cs$strata != "") d[[cs$strata]] else rep(1, n)
  cg <- if (cs$cengroup != "") d[[cs$cengroup]] else rep(1, n)
  e <- expand(d[[cs$time]], d[[cs$status]], cs$cause, d[, covs, drop = FALSE], w, st, cg)
  fml <- as.formula(paste("Surv(start, stop, event) ~", paste(covs, collapse = " + "),
                          "+ strata(st)"))
  f <- if (is.null(init)) coxph(fml, data = e, weights = wt, ties = cs$ties, control = CTL)
       else coxph(fml, data = e, weights = wt, ties = cs$ties, control = CTL, init = init)
  for (polish in 1:5) {
    chk <- coxph(fml, data = e, weights = wt, ties = cs$ties, init = coef(f),
                 control = coxph.control(iter.max = 0, toler.chol = 1e-15))
    if (chk$score < 1e-20) break
    f <- coxph(fml, data = e, weights = wt, ties = cs$ties, init = coef(f),
               control = coxph.control(eps = 1e-15, iter.max = 3, toler.chol = 1e-15))
  }
  if (chk$score >= 1e-20) stop(paste("coxph did not converge:", cs$case, chk$score))
  f$n_rows <- nrow(e)
  f$expanded <- e      # the rows fitted, with `id` (the subject: its row of d[keep, ])
  f
}

# eta (n_subjects x d): each subject's score residual with the censoring weights held
# fixed, per unit of its case weight: sum over its expanded rows r of
# (wt_r / w_j) * residuals(f, "score")[r] (coxph's per-row score residual, unweighted:
# d U / d wt_r), at coef(f). Rows in subject order 1..n.
score_eta <- function(f, w) {
  e <- f$expanded
  eta <- rowsum(e$wt / w[e$id] * residuals(f, type = "score"), e$id)
  if (!identical(as.integer(rownames(eta)), seq_along(w))) stop("a subject without rows")
  unname(eta)
}

# coxph's score vector at beta with the row weights `wt` (coxph.detail, another C routine
# than the score residuals: the sum of its per-time contributions)
score_at <- function(f, beta, wt) {
  e <- f$expanded
  e$wt <- wt
  fml <- formula(f)
  environment(fml) <- environment()   # coxph.detail re-reads the data through the formula
  g <- coxph(fml, data = e, weights = wt, ties = f$method, init = beta,
             control = coxph.control(iter.max = 0, toler.chol = 1e-15))
  colSums(as.matrix(coxph.detail(g)$score))
}

# the checks of eta; stop() where one fails
check_eta <- function(f, eta, w, d, cs) {
  b <- coef(f)
  e <- f$expanded
  U <- score_at(f, b, e$wt)
  sum_eta <- colSums(w * eta)
  if (max(abs(sum_eta)) > 1e-8 || max(abs(sum_eta - U)) > 1e-8)
    stop(paste("sum_j w_j eta_j is not the score:", cs$case, max(abs(sum_eta)), max(abs(U))))
  # second route: the score residuals weighted by the row weights, summed per subject
  eta2 <- residuals(f, type = "score", collapse = e$id, weighted = TRUE) / w
  if (max(abs(eta2 - eta)) > 1e-12 * (1 + max(abs(eta))))
    stop(paste("collapse = id, weighted = TRUE / w is not eta:", cs$case))
  # eta_j = d U / d w_j with the subject's ratios wt_r / w_j held fixed: central
  # differences of coxph.detail's score in w_j (subjects: two tied failures of the cause,
  # a competing failure, a censoring; deterministic, no random draws)
  st <- d[[cs$status]]
  tm <- d[[cs$time]]
  ft <- tm[st == cs$cause]
  subj <- c(head(which(st == cs$cause & tm %in% ft[duplicated(ft)]), 2),
            head(which(st != cs$cause & st > 0 & tm < max(ft)), 1), head(which(st == 0), 1))
  gap <- 0
  for (j in subj) {
    h <- 1e-6 * w[j]
    own <- e$id == j
    up <- e$wt; up[own] <- up[own] * (w[j] + h) / w[j]
    dn <- e$wt; dn[own] <- dn[own] * (w[j] - h) / w[j]
    gap <- max(gap, abs((score_at(f, b, up) - score_at(f, b, dn)) / (2 * h) - eta[j, ]))
  }
  if (gap > 1e-6 * (1 + max(abs(eta))))
    stop(paste("eta is not d U / d w_j:", cs$case, gap))
  c(sum_eta = max(abs(sum_eta)), score = max(abs(U)), collapse = max(abs(eta2 - eta)),
    differences = gap)
}

# the unit-weight Breslow case against cmprsk::crr: without censoring psi = 0 and crr's
# sandwich is I^{-1} (sum_j eta_j eta_j') I^{-1}; checked on the case's design with the
# censored subjects dropped (no censoring hazard, so psi = 0; G_g is still 0 after the
# last time of group g), crr evaluated at the expanded fit's coefficients (maxiter = 0)
check_eta_crr <- function(d, cs) {
  if (!requireNamespace("cmprsk", quietly = TRUE)) return(NA)
  covs <- strsplit(cs$covariates, "+", fixed = TRUE)[[1]]
  du <- d[d[[cs$status]] != 0, , drop = FALSE]
  f <- fit_expanded(du, cs)
  eta <- score_eta(f, rep(1, nrow(du)))
  # the censoring groups still matter: G_g = 0 after the group's last time (crr's rule)
  cg <- if (cs$cengroup != "") du[[cs$cengroup]] else rep(1, nrow(du))
  cr <- cmprsk::crr(du[[cs$time]], du[[cs$status]], as.matrix(du[, covs, drop = FALSE]),
                    failcode = cs$cause, cencode = 0, cengroup = cg, init = coef(f),
                    maxiter = 0)
  Ii <- solve(cr$inf)
  gap <- max(abs(Ii %*% crossprod(eta) %*% Ii - cr$var))
  if (gap > 1e-9 * max(abs(cr$var))) stop(paste("crr's sandwich is not eta's:", gap))
  gap
}

information <- function(f) solve(if (is.null(f$naive.var)) f$var else f$naive.var)

# every row of a duplicated integer-weighted data set, weights dropped
duplicated_rows <- function(d, cs) {
  d2 <- d[rep(seq_len(nrow(d)), d[[cs$weights]]), , drop = FALSE]
  rownames(d2) <- NULL
  d2
}

main <- function(args) {
  outdir <- args[1]
  seed <- if (length(args) >= 2) as.integer(args[2]) else 20260125L
  n <- if (length(args) >= 3) as.integer(args[3]) else 200L
  set.seed(seed)
  dir.create(outdir, showWarnings = FALSE, recursive = TRUE)

  # the design of tests/r/fine_gray_reference.R, draw for draw (fine_gray_sim.R)
  here <- dirname(normalizePath(sub("^--file=", "",
                                    grep("^--file=", commandArgs(FALSE), value = TRUE)[1])))
  source(file.path(here, "fine_gray_sim.R"))
  sim <- fine_gray_sim(n)$sim
  # drawn after that design
  sim$w <- round(runif(n, 0.5, 2), 3)
  sim$wi <- sample(1:3, n, replace = TRUE)
  sim$st <- sample(1:2, n, replace = TRUE)
  pbc2 <- data.frame(time = pbc$time, status = pbc$status, age = pbc$age,
                     logbili = log(pbc$bili), albumin = pbc$albumin, edema = pbc$edema)
  write.csv(sim, file.path(outdir, "data_sim.csv"), row.names = FALSE)
  write.csv(pbc2, file.path(outdir, "data_pbc.csv"), row.names = FALSE)
  datasets <- list(sim = read.csv(file.path(outdir, "data_sim.csv")),
                   pbc = read.csv(file.path(outdir, "data_pbc.csv")))

  cases <- data.frame(
    case = c("sim_unit_breslow", "sim_w_breslow", "sim_w_efron", "sim_strata_breslow",
             "sim_strata_efron", "sim_int_breslow", "sim_int_efron", "pbc_death_efron"),
    dataset = c(rep("sim", 7), "pbc"),
    time = "time", status = "status",
    cause = c(1, 1, 1, 1, 1, 1, 1, 2),
    covariates = c(rep("x1+x2+x3", 7), "age+logbili+albumin+edema"),
    cengroup = c(rep("cg", 7), ""),
    weights = c("", "w", "w", "w", "w", "wi", "wi", ""),
    strata = c("", "", "", "st", "st", "st", "", ""),
    ties = c("breslow", "breslow", "efron", "breslow", "efron", "breslow", "efron", "efron"),
    stringsAsFactors = FALSE)
  write.csv(cases, file.path(outdir, "cases.csv"), row.names = FALSE)

  rows <- list()
  put <- function(case, quantity, m) {
    m <- as.matrix(m)
    rows[[length(rows) + 1]] <<- data.frame(case = case, quantity = quantity,
                                            row = as.vector(row(m)) - 1,
                                            col = as.vector(col(m)) - 1,
                                            value = as.vector(m))
  }
  for (k in seq_len(nrow(cases))) {
    cs <- cases[k, ]
    d <- datasets[[cs$dataset]]
    f <- fit_expanded(d, cs)
    put(cs$case, "coef", t(coef(f)))
    put(cs$case, "loglik", f$loglik[2])
    put(cs$case, "information", information(f))
    w <- if (cs$weights != "") d[[cs$weights]] else rep(1, nrow(d))
    eta <- score_eta(f, w)
    put(cs$case, "eta", eta)
    chk <- check_eta(f, eta, w, d, cs)
    if (cs$case == "sim_unit_breslow") chk <- c(chk, crr_sandwich = check_eta_crr(d, cs))
    message(cs$case, ": ", paste(names(chk), signif(chk, 3), sep = " ", collapse = ", "))
    st <- d[[cs$status]]
    pick <- function(m, k) { w <- which(m); if (length(w) <= k) w else sample(w, k) }
    loo <- c(pick(st == cs$cause, 2), pick(st != cs$cause & st > 0, 2), pick(st == 0, 2),
             which.max(d[[cs$time]]))
    if (cs$weights != "") loo <- c(loo, which.max(d[[cs$weights]]))
    loo <- sort(unique(loo))
    put(cs$case, "loo_rows", t(loo - 1))
    put(cs$case, "loo", t(sapply(loo, function(i)
      coef(fit_expanded(d, cs, keep = -i, init = coef(f))))))
    if (cs$weights == "wi") {
      dup <- cs
      dup$weights <- ""
      fd <- fit_expanded(duplicated_rows(d, cs), dup, init = coef(f))
      gap <- max(abs(coef(fd) - coef(f)))
      if (cs$ties == "breslow" && gap > 1e-9)
        stop(paste("integer weights are not duplicated rows under Breslow:", gap))
      if (cs$ties == "efron") put(cs$case, "coef_duplicated", t(coef(fd)))
    }
  }
  write.csv(do.call(rbind, rows), file.path(outdir, "reference.csv"), row.names = FALSE)
}

if (sys.nframe() == 0L) main(commandArgs(trailingOnly = TRUE))
