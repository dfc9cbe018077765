# Golden fixture for tests/test_verified.py::test_kidney_clusters_refit_as_r:
# survival::kidney (38 patients, two recurrence times each, both rows at risk from 0)
# and R's exact leave-one-patient-out refits of coxph(Surv(time, status) ~ age + sex +
# disease) (Efron). Deleting patient 21 sends a careless quasi-Newton refit far away;
# R's refit exists.
#   Rscript tests/r/kidney_reference.R tests/fixtures/r_kidney
library(survival)
out <- commandArgs(trailingOnly = TRUE)[1]
d <- kidney[, c("id", "time", "status", "age", "sex", "disease")]
write.csv(d, file.path(out, "kidney.csv"), row.names = FALSE)
f <- coxph(Surv(time, status) ~ age + sex + disease, data = d)
ids <- sort(unique(d$id))
loo <- t(sapply(ids, function(i) coef(coxph(Surv(time, status) ~ age + sex + disease,
                                            data = d[d$id != i, ],
                                            control = coxph.control(eps = 1e-12)))))
write.csv(data.frame(id = ids, loo), file.path(out, "loo_coef.csv"), row.names = FALSE)
write.csv(data.frame(t(coef(f))), file.path(out, "coef.csv"), row.names = FALSE)
