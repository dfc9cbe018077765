# Golden fixture for tests/test_targets.py::test_survival_se_equals_r_survfit:
# summary(survfit(fit, newdata), times)$std.err (the standard error of S(t|x), which R
# computes with the baseline hazard's variance; Tsiatis 1981) for the integration data,
# Breslow and Efron, the new patients and times of tests/test_targets.py.
#   Rscript tests/r/survfit_se_reference.R tests/fixtures/integration
library(survival)
out <- commandArgs(trailingOnly = TRUE)[1]
d <- read.csv(file.path(out, "gbsg2_subset.csv"))
newp <- data.frame(age = c(45, 60, 70), tsize = c(20, 35, 50), pnodes = c(1, 5, 15),
                   progrec = c(100, 20, 5), estrec = c(80, 10, 200), horTh = c(1, 0, 0))
times <- c(365, 1000, 1800)
rows <- list()
for (ties in c("breslow", "efron")) {
  fit <- coxph(Surv(time, cens) ~ age + tsize + pnodes + progrec + estrec + horTh,
               data = d, ties = ties, control = coxph.control(eps = 1e-14, iter.max = 200))
  s <- summary(survfit(fit, newdata = newp), times = times, extend = TRUE)
  se <- t(s$std.err); sv <- t(s$surv)      # patients x times
  rows[[ties]] <- data.frame(ties = ties, patient = rep(0:2, 3), time = rep(times, each = 3),
                             surv = as.vector(sv), std_err = as.vector(se))
}
write.csv(do.call(rbind, rows), file.path(out, "survfit_se.csv"), row.names = FALSE)
