# The simulated Fine-Gray design of the R fixtures, one definition for
# fine_gray_reference.R and fine_gray_expanded_reference.R (both source this file).
#
# fine_gray_sim(n): n subjects, x1 normal, x2 binary, x3 uniform, two censoring groups cg
# (uniform censoring in group 1, exponential in group 2), causes 1..3 with exponential
# latent times; returns list(sim, tt): sim with times rounded to tenths (many ties, also
# between causes and censorings; status 0 censored, 1..3 the cause), tt the times not
# rounded. Draws from R's generator in a fixed order: set the seed before calling.
fine_gray_sim <- function(n) {
  x1 <- rnorm(n); x2 <- rbinom(n, 1, 0.4); x3 <- runif(n)
  cg <- sample(1:2, n, replace = TRUE)
  lp <- 0.6 * x1 - 0.5 * x2 + 0.8 * x3
  t1 <- rexp(n, 0.10 * exp(lp)); t2 <- rexp(n, 0.06 * exp(-0.3 * x1)); t3 <- rexp(n, 0.03)
  cens <- ifelse(cg == 1, runif(n, 2, 14), rexp(n, 0.12))
  tt <- pmin(t1, t2, t3, cens)
  status <- ifelse(tt == cens, 0, ifelse(tt == t1, 1, ifelse(tt == t2, 2, 3)))
  sim <- data.frame(time = pmax(round(tt, 1), 0.1), status = status, x1 = x1, x2 = x2,
                    x3 = x3, cg = cg)
  list(sim = sim, tt = tt)
}
