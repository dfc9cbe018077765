# Golden reference from R's survival package for Markov multi-state Cox models with case
# weights, strata and initial states (issue 47, item 3): coxph(Surv(tstart, tstop, state)
# ~ x1 + x2 [+ strata(g)], id = id [, weights = w] [, istate = istate]) and
# summary(survfit(fit, newdata), times)$pstate.
#
# Regenerate (from the repository root; writes tests/fixtures/r_multistate_options/):
#   Rscript tests/r/multistate_options_reference.R [OUTDIR]
# Deterministic (fixed seed, no network); read by tests/test_multistate_options_r.py.
#
# Data: a simulated illness-death set (healthy -> ill -> dead, healthy -> dead; 150
# subjects entering at integer times 0..4, integer times so ties), the state a factor
# (censor, ill, dead), and per subject a case weight w (0.5..2.5, two decimals), a
# stratum g ("a"/"b") and, for a quarter of the subjects who fell ill, one row entering
# already ill (istate "ill"; every other subject's first row "healthy", later rows the
# state their previous row entered).
# Data sets (model):
#   weights      ~ x1 + x2, weights = w (constant within subject)
#   weights_rows ~ x1 + x2, weights = wr (varying within subject: R takes it)
#   strata       ~ x1 + x2 + strata(g) (every transition's baseline by stratum)
#   istate       ~ x1 + x2, istate = istate (subjects starting in different states)
#   all          ~ x1 + x2 + strata(g), weights = w, istate = istate
#   all_shared   as all, x1's coefficient shared by 1:2 and 1:3 (1:2 + 1:3 ~ x1 / common)
#   recovery     ~ x1 + x2, istate = istate, with ill -> healthy transitions (state 3:
#                healthy is entered too; R orders the transitions by target, then origin)
# Files, per data set <ds>:
#   data_<ds>.csv    id, tstart, tstop, state (0 censored, 1 ill, 2 dead, 3 healthy), x1, x2, w, wr,
#                    g, istate (the whole data; every set reads its columns)
#   states_<ds>.csv  name: fit$states
#   coef_<ds>.csv    name, coef, se (fit$var: robust), naive_se
#   var_<ds>.csv, naive_var_<ds>.csv, loglik_<ds>.csv
#   pstate_<ds>.csv  stratum ("" without strata), time, patient, state, p: survfit(fit,
#                    newdata)$pstate read at the times, every stratum x patient
#   p0_<ds>.csv      stratum, state, p0: survfit's initial state distribution
#   newdata_<ds>.csv the new patients (x1, x2)
#   refit_<ds>.csv   id, name, coef: coxph refitted without the subject id
#   refused.csv      what R refuses: case, message
args <- commandArgs(trailingOnly = TRUE)
out <- if (length(args)) args[1] else "tests/fixtures/r_multistate_options"
dir.create(out, showWarnings = FALSE, recursive = TRUE)
suppressPackageStartupMessages(library(survival))
writeLines(c(R.version.string, paste("survival", packageVersion("survival"))),
           file.path(out, "VERSIONS.txt"))

set.seed(20261130)
rows <- list()
for (i in 1:150) {
  x1 <- round(rnorm(1), 3); x2 <- rbinom(1, 1, 0.4)
  w <- round(runif(1, 0.5, 2.5), 2); g <- sample(c("a", "b"), 1)
  entry <- sample(0:4, 1)
  t12 <- entry + ceiling(rexp(1, 0.06 * exp(0.5 * x1)))
  t13 <- entry + ceiling(rexp(1, 0.03 * exp(0.4 * x2)))
  cens <- entry + sample(5:30, 1)
  id <- 1000 + sample(1:9, 1) * 1000 + i
  add <- function(...) rows[[length(rows) + 1]] <<- data.frame(...)
  if (t12 <= t13 && t12 < cens) {
    t23 <- t12 + ceiling(rexp(1, 0.08 * exp(0.3 * x1 - 0.5 * x2)))
    s2 <- if (t23 <= cens) 2 else 0
    if (runif(1) < 0.25) {         # prevalent illness: enters already ill
      add(id = id, tstart = entry, tstop = min(t23, cens), state = s2, x1 = x1, x2 = x2,
          w = w, wr = w, g = g, istate = "ill")
    } else {
      add(id = id, tstart = entry, tstop = t12, state = 1, x1 = x1, x2 = x2, w = w,
          wr = w, g = g, istate = "healthy")
      add(id = id, tstart = t12, tstop = min(t23, cens), state = s2, x1 = x1, x2 = x2,
          w = w, wr = round(w * 1.5, 2), g = g, istate = "ill")
    }
  } else if (t13 < cens) {
    add(id = id, tstart = entry, tstop = t13, state = 2, x1 = x1, x2 = x2, w = w, wr = w,
        g = g, istate = "healthy")
  } else {
    add(id = id, tstart = entry, tstop = cens, state = 0, x1 = x1, x2 = x2, w = w, wr = w,
        g = g, istate = "healthy")
  }
}
sim <- do.call(rbind, rows)
sim$fstate <- factor(sim$state, 0:2, labels = c("censor", "ill", "dead"))
new <- data.frame(x1 = c(-0.5, 1), x2 = c(0, 1))
times <- c(3, 8, 15, 25)

fits <- list(
  weights = function(d) coxph(Surv(tstart, tstop, fstate) ~ x1 + x2, data = d, id = id,
                              weights = w),
  weights_rows = function(d) coxph(Surv(tstart, tstop, fstate) ~ x1 + x2, data = d,
                                   id = id, weights = wr),
  strata = function(d) coxph(Surv(tstart, tstop, fstate) ~ x1 + x2 + strata(g), data = d,
                             id = id),
  istate = function(d) coxph(Surv(tstart, tstop, fstate) ~ x1 + x2, data = d, id = id,
                             istate = istate),
  all = function(d) coxph(Surv(tstart, tstop, fstate) ~ x1 + x2 + strata(g), data = d,
                          id = id, weights = w, istate = istate),
  all_shared = function(d) coxph(list(Surv(tstart, tstop, fstate) ~ x1 + x2 + strata(g),
                                      1:2 + 1:3 ~ x1 / common), data = d, id = id,
                                 weights = w, istate = istate))
# recovery (ill -> healthy): half of the ill subjects censored on their second row recover
# instead; healthy is then an entered state too, so no state is only initial
recovery <- sim
back <- which(duplicated(recovery$id) & recovery$state == 0)
recovery$state[back[seq(1, length(back), 2)]] <- 3
recovery$fstate <- factor(recovery$state, 0:3, labels = c("censor", "ill", "dead", "healthy"))
fits$recovery <- function(d) coxph(Surv(tstart, tstop, fstate) ~ x1 + x2, data = d, id = id,
                                   istate = istate)
data_of <- list(recovery = recovery)
prevalent <- unique(sim$id[sim$istate == "ill" & !duplicated(sim$id)])
ill <- unique(sim$id[duplicated(sim$id)])
refit_ids <- unique(c(unique(sim$id)[1:2], ill[1:2], prevalent[1:2]))
for (ds in names(fits)) {
  d <- if (is.null(data_of[[ds]])) sim else data_of[[ds]]
  fit <- fits[[ds]](d)
  write.csv(d[, setdiff(names(d), "fstate")], file.path(out, paste0("data_", ds, ".csv")),
            row.names = FALSE)
  write.csv(data.frame(name = fit$states), file.path(out, paste0("states_", ds, ".csv")),
            row.names = FALSE)
  write.csv(data.frame(name = names(coef(fit)), coef = unname(coef(fit)),
                       se = sqrt(diag(fit$var)), naive_se = sqrt(diag(fit$naive.var))),
            file.path(out, paste0("coef_", ds, ".csv")), row.names = FALSE)
  write.csv(fit$var, file.path(out, paste0("var_", ds, ".csv")), row.names = FALSE)
  write.csv(fit$naive.var, file.path(out, paste0("naive_var_", ds, ".csv")), row.names = FALSE)
  write.csv(data.frame(loglik = fit$loglik), file.path(out, paste0("loglik_", ds, ".csv")),
            row.names = FALSE)
  write.csv(new, file.path(out, paste0("newdata_", ds, ".csv")), row.names = FALSE)
  sf <- survfit(fit, newdata = new)
  p0 <- matrix(sf$p0, ncol = length(fit$states))
  strata_names <- if (is.null(sf$strata)) "" else sub("^g=", "", names(sf$strata))
  write.csv(data.frame(stratum = rep(strata_names, times = length(fit$states)),
                       state = rep(fit$states, each = length(strata_names)), p0 = c(p0)),
            file.path(out, paste0("p0_", ds, ".csv")), row.names = FALSE)
  # summary(sf, times) fails for strata x newdata in survival 3.5.3 ("incorrect number of
  # dimensions" in summary.survfitms): read each stratum's curve at the times (the last
  # row at or before t; p0 before the first), which is what summary(..., extend = TRUE) does
  nst <- if (is.null(sf$strata)) 1 else length(sf$strata)
  ends <- cumsum(if (is.null(sf$strata)) length(sf$time) else sf$strata)
  res <- NULL
  for (k in seq_len(nst)) {
    rows_k <- (if (k == 1) 1 else ends[k - 1] + 1):ends[k]
    for (t in times) {
      j <- rows_k[sf$time[rows_k] <= t]
      for (pt in seq_len(nrow(new))) {
        pr <- if (length(j)) sf$pstate[max(j), pt, ] else p0[k, ]
        res <- rbind(res, data.frame(stratum = strata_names[k], time = t, patient = pt - 1,
                                     state = fit$states, p = pr))
      }
    }
  }
  write.csv(res, file.path(out, paste0("pstate_", ds, ".csv")), row.names = FALSE)
  refits <- NULL
  for (id in refit_ids) {
    r <- fits[[ds]](d[d$id != id, ])
    refits <- rbind(refits, data.frame(id = id, name = names(coef(r)), coef = unname(coef(r))))
  }
  write.csv(refits, file.path(out, paste0("refit_", ds, ".csv")), row.names = FALSE)
}

# what R refuses
refused <- NULL
try_msg <- function(case, expr) {
  m <- tryCatch({ force(expr); "" }, error = function(e) conditionMessage(e))
  refused <<- rbind(refused, data.frame(case = case, message = m))
}
z <- sim; z$w[1] <- 0
try_msg("zero weight", coxph(Surv(tstart, tstop, fstate) ~ x1 + x2, data = z, id = id,
                             weights = w))
z$w[1] <- -1
try_msg("negative weight", coxph(Surv(tstart, tstop, fstate) ~ x1 + x2, data = z, id = id,
                                 weights = w))
write.csv(refused, file.path(out, "refused.csv"), row.names = FALSE)
