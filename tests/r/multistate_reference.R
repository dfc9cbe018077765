# Golden reference from R's survival package for Markov multi-state Cox models
# (issue 47, item 3): coxph(Surv(tstart, tstop, state) ~ ..., id = id) and
# survfit(fit, newdata)$pstate (Aalen-Johansen).
#
# Regenerate (from the repository root; writes tests/fixtures/r_multistate/):
#   Rscript tests/r/multistate_reference.R [OUTDIR]
# Deterministic (fixed seed, no network); read by tests/test_multistate_r.py.
#
# Data sets
#   mgus2   survival::mgus2 in multi-state form as in the vignette "Multi-state models and
#           competing risks" (tmerge: states (s0) -> pcm -> death, (s0) -> death), ~ age +
#           male; monthly times (ties), the pcm -> death rows enter late (delayed entry)
#   sim_shared  the simulated set with x1's coefficient shared by 1:2 and 1:3
#           (coxph(list(Surv(...) ~ x1 + x2, 1:2 + 1:3 ~ x1 / common)))
#   sim     a simulated illness-death set (healthy -> ill -> dead, healthy -> dead), 150
#           subjects entering at integer times 0..4 (delayed entry into the first state),
#           integer times (ties), ~ x1 + x2
# Files, per data set <ds>:
#   data_<ds>.csv     id, tstart, tstop, state (0 = censored, 1.. = the states' codes), covariates
#   states_<ds>.csv   code, name (the factor's levels after censoring)
#   coef_<ds>.csv     name, coef, se (fit$var: robust, R's default with id), naive_se
#   var_<ds>.csv, naive_var_<ds>.csv   the covariance matrices (fit$var, fit$naive.var)
#   loglik_<ds>.csv   fit$loglik (initial, final)
#   pstate_<ds>.csv   time, patient, state, p: summary(survfit(fit, newdata), times)$pstate
#   newdata_<ds>.csv  the new patients
#   refit_<ds>.csv    id, name, coef: coxph refitted without the subject id
args <- commandArgs(trailingOnly = TRUE)
out <- if (length(args)) args[1] else "tests/fixtures/r_multistate"
dir.create(out, showWarnings = FALSE, recursive = TRUE)
suppressPackageStartupMessages(library(survival))
writeLines(c(R.version.string, paste("survival", packageVersion("survival"))),
           file.path(out, "VERSIONS.txt"))

mgus <- tmerge(mgus2[, c("id", "age", "sex")], mgus2, id = id,
               death = event(futime, death), pcm = event(ptime, pstat))
mgus$state <- with(mgus, ifelse(pcm == 1, 1, 2 * death))
mgus$male <- as.numeric(mgus$sex == "M")
mgus <- mgus[, c("id", "tstart", "tstop", "state", "age", "male")]

set.seed(20261129)
sim_rows <- list()
for (i in 1:150) {
  x1 <- round(rnorm(1), 3); x2 <- rbinom(1, 1, 0.4)
  entry <- sample(0:4, 1)
  t12 <- entry + ceiling(rexp(1, 0.06 * exp(0.5 * x1)))
  t13 <- entry + ceiling(rexp(1, 0.03 * exp(0.4 * x2)))
  cens <- entry + sample(5:30, 1)
  id <- 1000 + sample(1:9, 1) * 1000 + i
  if (t12 <= t13 && t12 < cens) {
    t23 <- t12 + ceiling(rexp(1, 0.08 * exp(0.3 * x1 - 0.5 * x2)))
    sim_rows[[length(sim_rows) + 1]] <- c(id, entry, t12, 1, x1, x2)
    sim_rows[[length(sim_rows) + 1]] <- c(id, t12, min(t23, cens),
                                          if (t23 <= cens) 2 else 0, x1, x2)
  } else if (t13 < cens) {
    sim_rows[[length(sim_rows) + 1]] <- c(id, entry, t13, 2, x1, x2)
  } else {
    sim_rows[[length(sim_rows) + 1]] <- c(id, entry, cens, 0, x1, x2)
  }
}
sim <- as.data.frame(do.call(rbind, sim_rows))
names(sim) <- c("id", "tstart", "tstop", "state", "x1", "x2")

sets <- list(mgus2 = list(data = mgus, covs = c("age", "male"), names = c("pcm", "death"),
                          new = data.frame(age = c(60, 75), male = c(0, 1)),
                          times = c(12, 50, 100, 200, 300), refit = c(1, 5, 17, 1003)),
             sim = list(data = sim, covs = c("x1", "x2"), names = c("ill", "dead"),
                        new = data.frame(x1 = c(-0.5, 1), x2 = c(0, 1)),
                        times = c(3, 8, 15, 25), refit = NULL),
             sim_shared = list(data = sim, covs = c("x1", "x2"), names = c("ill", "dead"),
                               new = data.frame(x1 = c(-0.5, 1), x2 = c(0, 1)),
                               times = c(3, 8, 15, 25), refit = NULL,
                               shared = "1:2 + 1:3 ~ x1 / common"))
for (ds in names(sets)) {
  s <- sets[[ds]]
  d <- s$data
  write.csv(d, file.path(out, paste0("data_", ds, ".csv")), row.names = FALSE)
  write.csv(data.frame(code = seq_along(s$names), name = s$names),
            file.path(out, paste0("states_", ds, ".csv")), row.names = FALSE)
  d$fstate <- factor(d$state, 0:length(s$names), labels = c("censor", s$names))
  f <- as.formula(paste("Surv(tstart, tstop, fstate) ~", paste(s$covs, collapse = " + ")))
  if (!is.null(s$shared)) f <- list(f, as.formula(s$shared))
  fit <- coxph(f, data = d, id = id)
  write.csv(data.frame(name = names(coef(fit)), coef = unname(coef(fit)),
                       se = sqrt(diag(fit$var)), naive_se = sqrt(diag(fit$naive.var))),
            file.path(out, paste0("coef_", ds, ".csv")), row.names = FALSE)
  write.csv(fit$var, file.path(out, paste0("var_", ds, ".csv")), row.names = FALSE)
  write.csv(fit$naive.var, file.path(out, paste0("naive_var_", ds, ".csv")), row.names = FALSE)
  write.csv(data.frame(loglik = fit$loglik), file.path(out, paste0("loglik_", ds, ".csv")),
            row.names = FALSE)
  write.csv(s$new, file.path(out, paste0("newdata_", ds, ".csv")), row.names = FALSE)
  sm <- summary(survfit(fit, newdata = s$new), times = s$times)
  p <- sm$pstate
  g <- expand.grid(time = seq_along(s$times), patient = seq_len(nrow(s$new)),
                   state = seq_len(dim(p)[3]))
  g$p <- p[cbind(g$time, g$patient, g$state)]
  g$time <- s$times[g$time]
  g$patient <- g$patient - 1
  g$state <- c("(s0)", s$names)[g$state]
  write.csv(g, file.path(out, paste0("pstate_", ds, ".csv")), row.names = FALSE)
  refit_ids <- if (is.null(s$refit)) unique(d$id[d$state == 1])[1:3] else s$refit
  refit_ids <- c(refit_ids, unique(d$id)[1:2])
  rows <- NULL
  for (id in unique(refit_ids)) {
    r <- coxph(f, data = d[d$id != id, ], id = id)
    rows <- rbind(rows, data.frame(id = id, name = names(coef(r)), coef = unname(coef(r))))
  }
  write.csv(rows, file.path(out, paste0("refit_", ds, ".csv")), row.names = FALSE)
}
