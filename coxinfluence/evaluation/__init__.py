"""Test-set performance of a fitted model with standard errors (Brier score, AUC,
C-index; R's ``riskRegression::Score`` and ``survival::concordance``)."""
