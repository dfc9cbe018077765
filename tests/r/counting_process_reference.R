# Golden reference from R's survival package for counting-process (start, stop] Cox data
# with several rows per subject, subjects (id) and clusters.
#
# Regenerate (from the repository root; writes tests/fixtures/r_counting/):
#   Rscript tests/r/counting_process_reference.R [OUTDIR]
# Deterministic: fixed seeds, no network. R and survival versions used are written to
# OUTDIR/VERSIONS.txt (generated with R 4.2.2 Patched, survival 3.5-3).
#
# Files (all read by tests/r_counting.py):
#   configs.csv          one row per config: data file, ties, whether weights / strata /
#                        clusters are used, covariate names, counts, survfit stratum
#   data_<config>.csv    start, stop, event, covariates, [weight], [stratum], id, [cluster]
#   reference_<config>.csv  long format: config, quantity, row, col, value (0-based)
#
# Configs
#   efron_plain, breslow_plain         simulated, no weights, no strata (data files still
#                                      carry weight = 1 and a single stratum "s1")
#   efron_wstrata (3 strata), breslow_wstrata (2 strata)
#                                      simulated, non-integer weights constant within
#                                      subject + strata; rows shuffled (not grouped by id)
#   rightcens                          simulated, one row per subject, start = 0, efron,
#                                      weights + strata (the right-censored special case)
#   heart        survival::heart (jasa1), Surv(start, stop, event) ~ age + year + surgery +
#                transplant, id = id, efron; no clusters
#   cgd          survival::cgd (recurrent infections), Surv(tstart, tstop, status) ~ treat +
#                sex + age + inherit + propylac + strata(hos.cat), id = id, cluster = center,
#                efron; dummies: treat = rIFN-g, sex = female, inherit = autosomal
#                (steroids is left out: 7 rows, 4 events, and its coefficient diverges
#                within the hos.cat strata: "Loglik converged before variable 5")
#   lung_age     survival::lung on the age time scale (left truncation: every row enters
#                at start = round(365.25 * age) days > 0, leaves at start + time), event =
#                status == 2, ~ female + ph.ecog + pat.karno, id = row, cluster = inst,
#                efron; rows with a missing inst / ph.ecog / pat.karno dropped
# Simulated designs: subjects with 1-4 contiguous intervals, x1 time-varying (changes
# between a subject's intervals), x2 ~ 50 + 10 U (far from unit variance), x3 binary;
# ~30% delayed entry (first start in 1..6), integer times (tied event times, and event
# times equal to other rows' starts), events possible at the end of any interval
# (recurrent events), ids random 4-digit integers (sorted id order != row order),
# clusters of about 5 subjects (labels 101, 102, ...).
#
# Every fit uses control = coxph.control(eps = 1e-12, toler.chol = 1e-15, iter.max = 100).
# Main fit:  coxph(Surv(start, stop, event) ~ x1 + x2 + x3 [+ strata(stratum)],
#                  [weights = weight,] ties = ties, id = id, robust = FALSE, model = TRUE)
# (robust = FALSE so that fit$var is the inverse information: with id and recurrent events,
# or non-integer weights, coxph defaults to robust = TRUE and a robust fit$var).
# Quantities
#   coef, loglik (fit$loglik[2]), loglik_null (fit$loglik[1])          1 x d, 1 x 1
#   information      solve(fit$var) of the non-robust main fit             d x d
#   dfbeta_rows      residuals(fit, "dfbeta"): R's default weighted = TRUE, i.e. row i's
#                    w_i * score_i %*% fit$var                              rows x d
#   score_rows       residuals(fit, "score") (unweighted, R's default)     rows x d
#   dfbeta_id        residuals(fit, "dfbeta", collapse = id); rows = sorted unique id
#   dfbeta_cluster   residuals(fit, "dfbeta", collapse = cluster); rows = sorted cluster
#   robust_var_id    coxph(..., id = id, cluster = id)$var  (= crossprod(dfbeta_id))
#   robust_var_cluster  coxph(..., id = id, cluster = cluster)$var (= crossprod(dfbeta_cluster))
#   robust_var_rows  per-row sandwich crossprod(dfbeta_rows), with weighted dfbeta. NOTE:
#                    coxph(Surv(start, stop, event) ~ ..., robust = TRUE) with neither id nor
#                    cluster stops with "one of cluster or id is needed" for (start, stop]
#                    data, so it is computed as coxph(..., cluster = .row)$var with .row =
#                    1..n (one cluster per row); the script checks it equals
#                    crossprod(dfbeta_rows) and, for the non-integer-weight configs, the
#                    default fit without id (which R makes robust per row on its own).
#   loso_coef        coef refitted without all rows of each id (sorted id order), same
#                    control, init = coef(fit)                              n_id x d
#   loco_coef        the same leaving out each cluster (sorted cluster order)
#   survfit_newdata  the covariate vector used below (1 x d)
#   survfit_times    3 times: quantiles 0.25, 0.5, 0.75 (type 1) of the event times in the
#                    first stratum
#   survfit_surv, survfit_cumhaz  summary(survfit(fit, newdata, se.fit = FALSE),
#                    times, extend = TRUE)$surv / $cumhaz; for stratified fits newdata has
#                    the first (sorted) stratum level (configs.csv: survfit_stratum).
#                    lung_age: on the age scale the first risk sets hold 1-5 patients, so
#                    the cumulative hazard from age 0 is large (15-29) and survfit_surv is
#                    tiny (1e-7 .. 1e-13): compare cumhaz, or surv relatively.
# Cluster quantities are absent for heart (no clusters).
suppressPackageStartupMessages(library(survival))
args <- commandArgs(trailingOnly = TRUE)
script_dir <- local({
  a <- grep("^--file=", commandArgs(FALSE), value = TRUE)
  if (length(a)) dirname(normalizePath(sub("^--file=", "", a[1]))) else "tests/r"
})
outdir <- if (length(args) >= 1) args[1] else file.path(script_dir, "..", "fixtures", "r_counting")
dir.create(outdir, showWarnings = FALSE, recursive = TRUE)
outdir <- normalizePath(outdir)

ctl <- coxph.control(eps = 1e-12, toler.chol = 1e-15, iter.max = 100)
all_warnings <- character(0)
note <- function(...) cat(sprintf(...), "\n", sep = "")

# ---------------------------------------------------------------- simulated designs
make_design <- function(n_sub, seed, weighted = FALSE, n_strata = 1, max_k = 4,
                        delayed = 0.3, shuffle = FALSE, cluster_size = 5) {
  set.seed(seed)
  ids <- sample(1000:9999, n_sub)
  strata_lab <- c("a", "b", "c")[seq_len(n_strata)]
  n_cl <- ceiling(n_sub / cluster_size)
  cl <- 100L + sample(rep(seq_len(n_cl), length.out = n_sub))
  out <- vector("list", n_sub)
  for (s in seq_len(n_sub)) {
    k <- if (max_k == 1) 1L else sample(seq_len(max_k), 1)
    entry <- if (runif(1) < delayed) sample(1:6, 1) else 0
    stops <- entry + cumsum(ceiling(4 * rexp(k)))
    starts <- c(entry, head(stops, -1))
    x1 <- rnorm(1) + rnorm(k, sd = 0.7)          # time-varying
    x2 <- 50 + 10 * runif(1)
    x3 <- rbinom(1, 1, 0.4)
    eta <- 0.6 * x1 + 0.04 * (x2 - 55) - 0.5 * x3
    p <- plogis(0.2 + eta)
    ev <- rbinom(k, 1, ifelse(seq_len(k) < k, 0.5 * p, p))  # recurrent events allowed
    out[[s]] <- data.frame(
      start = starts, stop = stops, event = ev,
      x1 = round(x1, 6), x2 = round(x2, 6), x3 = x3,
      weight = if (weighted) round(runif(1, 0.5, 2.5), 3) else 1,
      stratum = if (n_strata > 1) sample(strata_lab, 1) else "s1",
      id = ids[s], cluster = cl[s])
  }
  d <- do.call(rbind, out)
  if (shuffle) d <- d[sample(nrow(d)), ]
  rownames(d) <- NULL
  d
}

describe <- function(d) {
  ev_t <- d$stop[d$event == 1]
  list(rows = nrow(d), subjects = length(unique(d$id)),
       clusters = if (is.null(d$cluster)) NA else length(unique(d$cluster)),
       events = sum(d$event), delayed = sum(tapply(d$start, d$id, min) > 0),
       tied_event_times = sum(duplicated(ev_t)),
       recurrent = sum(tapply(d$event, d$id, sum) > 1),
       multi_row = sum(table(d$id) > 1))
}

specs <- list(
  efron_plain     = list(ties = "efron",   weights = FALSE, strata = FALSE,
                         d = make_design(65, 101)),
  breslow_plain   = list(ties = "breslow", weights = FALSE, strata = FALSE,
                         d = make_design(60, 202)),
  efron_wstrata   = list(ties = "efron",   weights = TRUE,  strata = TRUE,
                         d = make_design(70, 303, weighted = TRUE, n_strata = 3, shuffle = TRUE)),
  breslow_wstrata = list(ties = "breslow", weights = TRUE,  strata = TRUE,
                         d = make_design(65, 404, weighted = TRUE, n_strata = 2, shuffle = TRUE)),
  rightcens       = list(ties = "efron",   weights = TRUE,  strata = TRUE,
                         d = make_design(60, 505, weighted = TRUE, n_strata = 3, max_k = 1,
                                         delayed = 0))
)
for (nm in names(specs)) {
  specs[[nm]]$covariates <- c("x1", "x2", "x3")
  specs[[nm]]$cluster <- TRUE
  specs[[nm]]$newdata <- data.frame(x1 = 0.3, x2 = 55, x3 = 1)
  specs[[nm]]$loso <- TRUE
  specs[[nm]]$simulated <- TRUE
}

# ---------------------------------------------------------------- R's data sets
h <- survival::heart
d_heart <- data.frame(start = h$start, stop = h$stop, event = h$event, age = h$age,
                      year = h$year, surgery = h$surgery,
                      transplant = as.numeric(h$transplant == "1"), id = h$id)
g <- survival::cgd
d_cgd <- data.frame(start = g$tstart, stop = g$tstop, event = g$status,
                    treat = as.numeric(g$treat == "rIFN-g"), sex = as.numeric(g$sex == "female"),
                    age = g$age, inherit = as.numeric(g$inherit == "autosomal"),
                    propylac = g$propylac, stratum = as.character(g$hos.cat), id = g$id,
                    cluster = as.integer(g$center))
l <- survival::lung
l <- l[complete.cases(l[, c("inst", "ph.ecog", "pat.karno")]), ]
entry <- round(365.25 * l$age)
d_lung <- data.frame(start = entry, stop = entry + l$time, event = as.numeric(l$status == 2),
                     female = as.numeric(l$sex == 2), ph.ecog = l$ph.ecog,
                     pat.karno = l$pat.karno, id = seq_len(nrow(l)), cluster = l$inst)
med <- function(d, cv) as.data.frame(lapply(d[cv], function(v) unname(median(v))))
specs$heart <- list(ties = "efron", weights = FALSE, strata = FALSE, cluster = FALSE,
                    d = d_heart, covariates = c("age", "year", "surgery", "transplant"))
specs$cgd <- list(ties = "efron", weights = FALSE, strata = TRUE, cluster = TRUE,
                  d = d_cgd, covariates = c("treat", "sex", "age", "inherit", "propylac"))
specs$lung_age <- list(ties = "efron", weights = FALSE, strata = FALSE, cluster = TRUE,
                       d = d_lung, covariates = c("female", "ph.ecog", "pat.karno"))
for (nm in c("heart", "cgd", "lung_age")) {
  specs[[nm]]$newdata <- med(specs[[nm]]$d, specs[[nm]]$covariates)
  specs[[nm]]$loso <- length(unique(specs[[nm]]$d$id)) <= 400
  specs[[nm]]$simulated <- FALSE
}

# ---------------------------------------------------------------- fitting helpers
run_coxph <- function(d, sp, extra = list()) {
  f <- reformulate(c(sp$covariates, if (sp$strata) "strata(stratum)"),
                   response = quote(Surv(start, stop, event)))
  cl <- quote(coxph(formula = F, data = d, ties = T, control = ctl, model = TRUE))
  cl$formula <- f
  cl$ties <- sp$ties
  if (sp$weights) cl$weights <- quote(weight)
  for (k in names(extra)) cl[[k]] <- extra[[k]]
  withCallingHandlers(eval(cl), warning = function(w) {
    all_warnings <<- c(all_warnings, paste0(sp$name, ": ", conditionMessage(w)))
    invokeRestart("muffleWarning")
  })
}

rows <- NULL
emit <- function(config, quantity, m) {
  m <- as.matrix(m)
  rows[[length(rows) + 1]] <<- data.frame(
    config = config, quantity = quantity,
    row = rep(seq_len(nrow(m)) - 1L, times = ncol(m)),
    col = rep(seq_len(ncol(m)) - 1L, each = nrow(m)), value = as.vector(m))
}
same <- function(a, b, what) {
  ok <- isTRUE(all.equal(unname(as.matrix(a)), unname(as.matrix(b)), tolerance = 1e-10))
  if (!ok) stop(what, " mismatch")
}

config_rows <- list()
calls <- character(0)
for (nm in names(specs)) {
  sp <- specs[[nm]]
  sp$name <- nm
  d <- sp$d
  keep <- c("start", "stop", "event", sp$covariates,
            if (sp$weights || sp$simulated) "weight",
            if (sp$strata || sp$simulated) "stratum", "id", if (sp$cluster) "cluster")
  write.csv(d[keep], file.path(outdir, paste0("data_", nm, ".csv")), row.names = FALSE, quote = FALSE)
  rows <- list()

  fit <- run_coxph(d, sp, list(id = quote(id), robust = FALSE))
  calls <- c(calls, paste0(nm, ": ", paste(deparse(fit$call, width.cutoff = 500), collapse = "")))
  stopifnot(is.null(fit$naive.var), fit$iter < 100)
  emit(nm, "coef", matrix(coef(fit), nrow = 1))
  emit(nm, "loglik", matrix(fit$loglik[2], 1))
  emit(nm, "loglik_null", matrix(fit$loglik[1], 1))
  emit(nm, "information", solve(fit$var))
  dfb <- residuals(fit, "dfbeta")
  emit(nm, "dfbeta_rows", dfb)
  emit(nm, "score_rows", residuals(fit, "score"))
  dfb_id <- residuals(fit, "dfbeta", collapse = d$id)
  stopifnot(identical(rownames(dfb_id), as.character(sort(unique(d$id)))))
  emit(nm, "dfbeta_id", dfb_id)

  # robust variances
  fr_id <- run_coxph(d, sp, list(id = quote(id), cluster = quote(id)))
  same(fr_id$var, crossprod(dfb_id), "robust_var_id")
  same(fr_id$naive.var, fit$var, "naive.var")
  emit(nm, "robust_var_id", fr_id$var)
  d$.row <- seq_len(nrow(d))
  err <- tryCatch({run_coxph(d, sp, list(robust = TRUE)); "no error"},
                  error = function(e) conditionMessage(e))
  fr_rows <- run_coxph(d, sp, list(cluster = quote(.row)))
  same(fr_rows$var, crossprod(dfb), "robust_var_rows")
  if (sp$weights) {   # non-integer weights: R's default (no id) is robust per row
    same(run_coxph(d, sp)$var, fr_rows$var, "default robust with weights")
  }
  emit(nm, "robust_var_rows", fr_rows$var)
  if (sp$cluster) {
    dfb_cl <- residuals(fit, "dfbeta", collapse = d$cluster)
    stopifnot(identical(rownames(dfb_cl), as.character(sort(unique(d$cluster)))))
    emit(nm, "dfbeta_cluster", dfb_cl)
    fr_cl <- run_coxph(d, sp, list(id = quote(id), cluster = quote(cluster)))
    same(fr_cl$var, crossprod(dfb_cl), "robust_var_cluster")
    emit(nm, "robust_var_cluster", fr_cl$var)
  }

  # exact leave-one-subject-out / leave-one-cluster-out refits
  b0 <- coef(fit)
  refit_without <- function(drop) {
    fi <- run_coxph(d[!drop, ], sp, list(id = quote(id), robust = FALSE, init = b0))
    stopifnot(fi$iter < 100)
    coef(fi)
  }
  if (sp$loso) emit(nm, "loso_coef", t(sapply(sort(unique(d$id)), function(i) refit_without(d$id == i))))
  if (sp$cluster) emit(nm, "loco_coef",
                       t(sapply(sort(unique(d$cluster)), function(k) refit_without(d$cluster == k))))

  # predicted survival for one new covariate vector (first stratum)
  nd <- sp$newdata
  s1 <- NA
  ev_stops <- d$stop[d$event == 1]
  if (sp$strata) {
    s1 <- sort(unique(d$stratum))[1]
    nd$stratum <- s1
    ev_stops <- d$stop[d$event == 1 & d$stratum == s1]
  }
  times <- unname(quantile(ev_stops, c(0.25, 0.5, 0.75), type = 1))
  sf <- survfit(fit, newdata = nd, se.fit = FALSE)
  ss <- summary(sf, times = times, extend = TRUE)
  emit(nm, "survfit_newdata", as.matrix(sp$newdata))
  emit(nm, "survfit_times", matrix(times, 1))
  emit(nm, "survfit_surv", matrix(ss$surv, 1))
  emit(nm, "survfit_cumhaz", matrix(ss$cumhaz, 1))

  write.csv(do.call(rbind, rows), file.path(outdir, paste0("reference_", nm, ".csv")),
            row.names = FALSE, quote = FALSE)
  ds <- describe(d)
  config_rows[[nm]] <- data.frame(
    config = nm, data = paste0("data_", nm, ".csv"), ties = sp$ties, weights = sp$weights,
    strata = sp$strata, clusters = sp$cluster, loso = sp$loso,
    covariates = paste(sp$covariates, collapse = ";"), rows = ds$rows, subjects = ds$subjects,
    n_clusters = ds$clusters, events = ds$events, delayed_entry = ds$delayed,
    tied_event_times = ds$tied_event_times, recurrent_subjects = ds$recurrent,
    multi_row_subjects = ds$multi_row, n_strata = if (sp$strata) length(unique(d$stratum)) else 1,
    survfit_stratum = s1)
  note("%-16s rows %4d subjects %4d clusters %3s events %4d delayed %3d ties %3d recurrent %3d | robust=TRUE w/o id: %s",
       nm, ds$rows, ds$subjects, ds$clusters, ds$events, ds$delayed, ds$tied_event_times,
       ds$recurrent, err)
}
cfg <- do.call(rbind, config_rows)
write.csv(cfg, file.path(outdir, "configs.csv"), row.names = FALSE, quote = FALSE)
writeLines(c(R.version.string, paste("survival", as.character(packageVersion("survival"))),
             "", "Main fits:", calls, "",
             "Warnings:", if (length(all_warnings)) unique(all_warnings) else "none"),
           file.path(outdir, "VERSIONS.txt"))
cat(R.version.string, "survival", as.character(packageVersion("survival")), "\n")
if (length(all_warnings)) cat("Warnings:\n", paste(unique(all_warnings), collapse = "\n"), "\n")
