"""The parametric (AFT) log-likelihood of R's ``survreg``: loss, gradient, Hessian and
third derivative in closed form, batched over deletions.

The model is ``log T = x'beta + sigma W`` (``x`` with an intercept), ``W`` standard
extreme value ("weibull"; "exponential" is the Weibull with ``sigma = 1`` fixed), normal
("lognormal") or logistic ("loglogistic"). Each stratum ``k`` has its own scale
``sigma_k = exp(s_k)`` (R's ``strata()`` in a ``survreg`` formula). The parameters are in
R's order: ``(Intercept)``, the covariates, then ``log(sigma)`` per stratum (none for the
exponential).

Row i, with ``z = (y - eta_i) / sigma``, ``eta_i = x_i'beta``, ``y`` a log time, and
``f0``, ``S0 = 1 - F0`` the density and survival function of ``W``, contributes (R's
``Surv(time, event)`` and ``Surv(lower, upper, type = "interval2")``)

    exact (event)       log f0(z) - log sigma - y     (the Jacobian of log T: R's loglik
                                                       is on the time scale)
    right-censored      log S0(z)
    left-censored       log F0(z)
    interval (l, u]     log(S0(z_l) - S0(z_u))
    delayed entry e     minus log S0(z_e)   (left truncation at e; beside any of the above)

The loss is minus the sum of the contributions with the case weights ``w_i``; deleting a
row sets its weight to 0, so the loss is decomposable: ``L_{-g} = L - sum_{i in g} w_i l_i``.

**Derivatives.** A contribution is a function ``h(z_1, .., z_m)`` of one or two
standardised times ``z_j = (y_j - eta) c``, ``c = exp(-s)``. With the operators
``A = sum_j d/dz_j`` (a shift of every ``z_j``) and ``B = sum_j z_j d/dz_j`` (a scaling),
``d z_j / d eta = -c`` and ``d z_j / d s = -z_j``, so

    l_eta = -c Ah                       l_s = -Bh
    l_eta,eta = c^2 A^2 h               l_eta,s = c (Ah + BAh)        l_s,s = B^2 h
    l_eta,eta,eta = -c^3 A^3 h          l_eta,eta,s = -c^2 (2 A^2 h + B A^2 h)
    l_eta,s,s = -c (Ah + 2 BAh + B^2 A h)          l_s,s,s = -B^3 h

(exact rows also add ``-1`` to ``l_s`` for ``-log sigma``). For one ``z`` and ``h = g(z)``:
``Ah = g'``, ``BAh = z g''``, ``B^2 h = z g' + z^2 g''``, ``B^3 h = z g' + 3 z^2 g'' + z^3 g'''``
and so on (:func:`_point`); the interval's ``h = log(S0(z_l) - S0(z_u))`` takes the
partial derivatives of a log (:func:`_interval`). ``g = log f0``, ``log S0``, ``log F0`` are
evaluated on the log scale (``scipy.special.log_ndtr``, ``logaddexp``; the hazards
``f0/S0`` and ``f0/F0`` as differences of logs), so no survival probability underflows.
With ``u = x' beta`` the parameter derivatives follow by the chain rule: the gradient of
``l_i`` is ``l_eta x_i`` and ``l_s e_k(i)``, the Hessian and third derivative the
matching outer products (:meth:`AFTLikelihood.loss_grad_hess`,
:meth:`AFTLikelihood.third_derivative`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coxinfluence.numerics.rows import matmul_reduce_rows, matmul_rows

#: R's survreg ``dist=`` names and the distribution of ``W``
DISTRIBUTIONS = {"weibull": "extreme", "exponential": "extreme", "lognormal": "gaussian",
                 "loglogistic": "logistic"}

#: row kinds (R's Surv status for type "interval": 0 right, 1 exact, 2 left, 3 interval)
RIGHT, EXACT, LEFT, INTERVAL = 0, 1, 2, 3

_LOG_SQRT_2PI = 0.5 * np.log(2 * np.pi)


# scipy.special imported on first use (``import coxinfluence`` imports no scipy)
def expit(z):
    from scipy.special import expit

    return expit(z)


def log_ndtr(z):
    from scipy.special import log_ndtr

    return log_ndtr(z)


# ------------------------------------------------------------------ distributions of W

class _Extreme:
    """Standard (minimum) extreme value: ``S0(z) = exp(-e^z)``."""

    @staticmethod
    def log_f(z):
        return z - np.exp(z)

    @staticmethod
    def psi(z):
        """``(log f0)'``, ``(log f0)''``, ``(log f0)'''``."""
        e = np.exp(z)
        return 1.0 - e, -e, -e

    @staticmethod
    def log_S(z):
        return -np.exp(z)

    @staticmethod
    def log_F(z):
        return np.log(-np.expm1(-np.exp(z)))

    @staticmethod
    def hazard(z):                       # f0 / S0
        return np.exp(z)

    @classmethod
    def reverse_hazard(cls, z):          # f0 / F0
        return np.exp(cls.log_f(z) - cls.log_F(z))


class _Gaussian:
    @staticmethod
    def log_f(z):
        return -0.5 * z * z - _LOG_SQRT_2PI

    @staticmethod
    def psi(z):
        return -z, np.full_like(z, -1.0), np.zeros_like(z)

    @staticmethod
    def log_S(z):
        return log_ndtr(-z)

    @staticmethod
    def log_F(z):
        return log_ndtr(z)

    @classmethod
    def hazard(cls, z):
        return np.exp(cls.log_f(z) - log_ndtr(-z))

    @classmethod
    def reverse_hazard(cls, z):
        return np.exp(cls.log_f(z) - log_ndtr(z))


class _Logistic:
    @staticmethod
    def log_f(z):
        a = np.abs(z)
        return -a - 2.0 * np.log1p(np.exp(-a))

    @staticmethod
    def psi(z):
        p, q = expit(z), expit(-z)
        return q - p, -2.0 * p * q, -2.0 * p * q * (q - p)

    @staticmethod
    def log_S(z):
        return -np.logaddexp(0.0, z)

    @staticmethod
    def log_F(z):
        return -np.logaddexp(0.0, -z)

    @staticmethod
    def hazard(z):
        return expit(z)

    @staticmethod
    def reverse_hazard(z):
        return expit(-z)


_FAMILIES = {"extreme": _Extreme, "gaussian": _Gaussian, "logistic": _Logistic}


def _log_of(fam, kind, z, order=3):
    """``g(z)`` and its first ``order`` derivatives (at most three) for ``g = log f0``
    ("f"), ``log S0`` ("S") or ``log F0`` ("F"). With ``psi = (log f0)'``: ``(log S0)' =
    -m`` (``m`` the hazard, ``m' = m (psi + m)``), ``(log F0)' = r`` (``r = f0/F0``, ``r' =
    r (psi - r)``)."""
    g = {"f": fam.log_f, "S": fam.log_S, "F": fam.log_F}[kind](z)
    if order == 0:
        return (g,)
    p1, p2, p3 = fam.psi(z)
    if kind == "f":
        return (g, p1, p2, p3)[:order + 1]
    if kind == "S":
        m = fam.hazard(z)
        g2 = -m * (p1 + m)
        return (g, -m, g2, g2 * (p1 + m) - m * (p2 - g2) if order >= 3 else None)[:order + 1]
    r = fam.reverse_hazard(z)
    g2 = r * (p1 - r)
    return (g, r, g2, g2 * (p1 - r) + r * (p2 - g2) if order >= 3 else None)[:order + 1]


# ------------------------------------------------------- one contribution's operators

#: the operators each derivative order needs (module docstring)
_KEYS = (("h",), ("A", "B"), ("AA", "BA", "BB"), ("AAA", "BAA", "BBA", "BBB"))


def _keys(order):
    return tuple(k for keys in _KEYS[:order + 1] for k in keys)


def _point(gs, z, order):
    """The operators of ``h = g(z)`` up to ``order`` (module docstring); ``gs`` is ``g``
    and its derivatives."""
    out = {"h": gs[0]}
    if order >= 1:
        g1 = gs[1]
        out.update(A=g1, B=z * g1)
    if order >= 2:
        zg2 = z * gs[2]
        out.update(AA=gs[2], BA=zg2, BB=z * g1 + z * zg2)
    if order >= 3:
        g3 = gs[3]
        zg3 = z * g3
        out.update(AAA=g3, BAA=zg3, BBA=zg2 + z * zg3,
                   BBB=z * g1 + 3.0 * z * zg2 + z * z * zg3)
    return out


def _log1mexp(a):
    """``log(1 - exp(a))`` for ``a <= 0``, accurately on both sides of ``-log 2``."""
    return np.where(a > -np.log(2.0), np.log(-np.expm1(a)), np.log1p(-np.exp(a)))


def _interval(fam, z1, z2, order):
    """The operators of ``h = log(S0(z1) - S0(z2))``, ``z1 < z2``: with ``P`` the
    probability, ``r_i = P_i / P`` (``P_1 = -f0(z1)``, ``P_2 = f0(z2)``, ``P_ii = P_i psi``,
    ``P_iii = P_i (psi^2 + psi')``, mixed ones 0), ``h_i = r_i``, ``h_ij = r_ij - r_i r_j``,
    ``h_ijk = r_ijk - (r_ij r_k + r_ik r_j + r_jk r_i) + 2 r_i r_j r_k``."""
    # log P on the side of the distribution where it is accurate (upper tail: S0)
    upper = 0.5 * (z1 + z2) > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        lS1, lS2 = fam.log_S(z1), fam.log_S(z2)
        lF1, lF2 = fam.log_F(z1), fam.log_F(z2)
        logP = np.where(upper, lS1 + _log1mexp(lS2 - lS1), lF2 + _log1mexp(lF1 - lF2))
    if order == 0:
        return {"h": logP}
    q1, d1, t1 = fam.psi(z1)
    q2, d2, t2 = fam.psi(z2)
    r1 = -np.exp(fam.log_f(z1) - logP)
    r2 = np.exp(fam.log_f(z2) - logP)
    r11, r22 = r1 * q1, r2 * q2
    h1, h2 = r1, r2
    h11, h22, h12 = r11 - r1 * r1, r22 - r2 * r2, -r1 * r2
    out = {"h": logP, "A": h1 + h2, "AA": h11 + 2.0 * h12 + h22,
           "B": z1 * h1 + z2 * h2,
           "BA": z1 * (h11 + h12) + z2 * (h12 + h22),
           "BB": z1 * h1 + z2 * h2 + z1 * z1 * h11 + 2.0 * z1 * z2 * h12 + z2 * z2 * h22}
    if order >= 3:
        r111, r222 = r1 * (q1 * q1 + d1), r2 * (q2 * q2 + d2)
        h111 = r111 - 3.0 * r11 * r1 + 2.0 * r1 ** 3
        h222 = r222 - 3.0 * r22 * r2 + 2.0 * r2 ** 3
        h112 = -r11 * r2 + 2.0 * r1 * r1 * r2
        h122 = -r22 * r1 + 2.0 * r1 * r2 * r2
        F1, F2 = h11 + h12, h12 + h22                      # partials of Ah
        F11, F12, F22 = h111 + h112, h112 + h122, h122 + h222
        out.update(
            AAA=h111 + 3.0 * h112 + 3.0 * h122 + h222,
            BAA=z1 * (h111 + 2.0 * h112 + h122) + z2 * (h112 + 2.0 * h122 + h222),
            BBA=z1 * F1 + z2 * F2 + z1 * z1 * F11 + 2.0 * z1 * z2 * F12 + z2 * z2 * F22,
            BBB=(z1 * h1 + z2 * h2
                 + 3.0 * (z1 * z1 * h11 + 2.0 * z1 * z2 * h12 + z2 * z2 * h22)
                 + z1 ** 3 * h111 + 3.0 * z1 * z1 * z2 * h112 + 3.0 * z1 * z2 * z2 * h122
                 + z2 ** 3 * h222))
    return out


# ------------------------------------------------------------------------------ data

@dataclass(eq=False)
class AFTData:
    """Validated AFT data in the caller's row order (built by
    :func:`coxinfluence.models.aft.fit_aft`).

    ``X`` (n, p) the design with the intercept first; ``kind`` (n,) one of ``RIGHT``,
    ``EXACT``, ``LEFT``, ``INTERVAL``; ``y`` the log time (exact, right), the log upper
    bound (left) or the log lower bound (interval); ``y2`` the log upper bound of interval
    rows (NaN elsewhere); ``entry`` the log entry time (``-inf``: none) or None;
    ``strata`` codes 0..K-1 (the scale's strata); ``dist`` a key of
    :data:`DISTRIBUTIONS`."""

    X: np.ndarray
    kind: np.ndarray
    y: np.ndarray
    y2: np.ndarray
    entry: object
    weights: np.ndarray
    strata: np.ndarray
    n_strata: int
    dist: str

    @property
    def n(self):
        return self.X.shape[0]

    @property
    def p(self):
        return self.X.shape[1]

    @property
    def fixed_scale(self):
        return self.dist == "exponential"

    @property
    def d(self):
        return self.p + (0 if self.fixed_scale else self.n_strata)


# ---------------------------------------------------------------------- likelihood

def presence_matrix(presence, n):
    """``presence`` as a (B, n) float array: None (one problem, every row), a
    :class:`coxinfluence.data.deletion.Deletion` (over the caller's rows) or an array."""
    if presence is None:
        return None
    P = getattr(presence, "presence", presence)
    P = np.atleast_2d(np.asarray(P, dtype=np.float64))
    if P.shape[1] != n:
        raise ValueError(f"presence has {P.shape[1]} columns but the data have {n} rows")
    return P


class AFTLikelihood:
    """The negative log-likelihood of :class:`AFTData` (module docstring) and its
    derivatives, for a batch of parameter vectors and deletions."""

    def __init__(self, data: AFTData):
        self.data = data
        self.family = _FAMILIES[DISTRIBUTIONS[data.dist]]
        k = data.kind
        self._groups = [(kind, np.flatnonzero(k == kind)) for kind in (RIGHT, EXACT, LEFT,
                                                                         INTERVAL)]
        self._groups = [(kind, idx) for kind, idx in self._groups if idx.size]
        self._entry = (None if data.entry is None
                       else np.flatnonzero(np.isfinite(data.entry)))
        if self._entry is not None and self._entry.size == 0:
            self._entry = None
        self._onehot = np.zeros((data.n, data.n_strata))
        self._onehot[np.arange(data.n), data.strata] = 1.0
        # each stratum's rows and design block (the scale's cross derivatives)
        self._blocks = ([(slice(None), data.X)] if data.n_strata == 1 else
                        [(idx, data.X[idx]) for idx in
                         (np.flatnonzero(data.strata == k) for k in range(data.n_strata))])
        # the Jacobian of the exact rows' log times, a constant of the loss (R's loglik)
        self._exact = (data.kind == EXACT).astype(np.float64)
        self._jacobian = data.y * self._exact

    # -------------------------------------------------------------- per-row parts
    def _eta_s(self, theta):
        data = self.data
        theta = np.atleast_2d(np.asarray(theta, dtype=np.float64))
        eta = matmul_rows(data.X, np.ascontiguousarray(theta[:, :data.p].T),
                          np.empty((data.n, theta.shape[0]))).T
        if theta.shape[0] > 1:
            eta = np.ascontiguousarray(eta)
        if data.fixed_scale:
            s = np.zeros_like(eta)
        else:
            s = theta[:, data.p:][:, data.strata]
        return eta, s

    def row_derivatives(self, theta, order=2):
        """Each row's log-likelihood contribution ``l`` and its derivatives in
        ``(eta, s)`` up to ``order`` at each row of ``theta`` (B, d): a dict of (B, n)
        arrays "l" (order 0), "e", "s" (1), "ee", "es", "ss" (2), "eee", "ees", "ess",
        "sss" (3)."""
        eta, s = self._eta_s(theta)
        data, fam = self.data, self.family
        keys = _keys(order)
        ops = {key: np.empty_like(eta) for key in keys}
        c = np.exp(-s)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            for kind, idx in self._groups:
                whole = idx.size == data.n
                z = ((data.y - eta) * c if whole
                     else (data.y[idx] - eta[:, idx]) * c[:, idx])
                if kind == INTERVAL:
                    y2 = data.y2 if whole else data.y2[idx]
                    z2 = (y2 - eta) * c if whole else (y2 - eta[:, idx]) * c[:, idx]
                    part = _interval(fam, z, z2, order)
                else:
                    which = {EXACT: "f", RIGHT: "S", LEFT: "F"}[kind]
                    part = _point(_log_of(fam, which, z, order), z, order)
                for key in keys:
                    if whole:
                        ops[key] = part[key]
                    else:
                        ops[key][:, idx] = part[key]
            if self._entry is not None:
                idx = self._entry
                z = (data.entry[idx] - eta[:, idx]) * c[:, idx]
                part = _point(_log_of(fam, "S", z, order), z, order)
                for key in keys:
                    ops[key][:, idx] -= part[key]
            exact = self._exact
            out = {"l": ops["h"] - exact * s - self._jacobian}
            if order >= 1:
                out.update(e=-c * ops["A"], s=-ops["B"] - exact)
            if order >= 2:
                out.update(ee=c * c * ops["AA"], es=c * (ops["A"] + ops["BA"]),
                           ss=ops["BB"])
            if order >= 3:
                out.update(eee=-c ** 3 * ops["AAA"],
                           ees=-c * c * (2.0 * ops["AA"] + ops["BAA"]),
                           ess=-c * (ops["A"] + 2.0 * ops["BA"] + ops["BBA"]),
                           sss=-ops["BBB"])
        return out

    def loss(self, theta, presence=None):
        """(B,) the negative log-likelihood at each row of ``theta`` (B, d) (presence as
        :meth:`loss_grad_hess`), without derivatives."""
        theta = np.atleast_2d(np.asarray(theta, dtype=np.float64))
        P = presence_matrix(presence, self.data.n)
        W = (np.broadcast_to(self.data.weights, (theta.shape[0], self.data.n)) if P is None
             else self.data.weights * P)
        with np.errstate(invalid="ignore"):
            lw = np.where(W > 0, W * self.row_derivatives(theta, order=0)["l"], 0.0)
        loss = -lw.sum(axis=1)
        loss[~np.isfinite(loss)] = np.inf
        return loss

    def _per_stratum(self, V):
        """(B, K) sums of the rows of ``V`` (B, n) within each stratum."""
        if self.data.n_strata == 1:
            return V.sum(axis=1, keepdims=True)
        return matmul_reduce_rows(self._onehot, V.T).T

    # ------------------------------------------------------------- the objective
    def loss_grad_hess(self, theta, presence=None, *, hess=True):
        # far from the maximum (a step-halving trial) a contribution may overflow: its
        # problem's loss is inf and its derivatives NaN, quietly
        with np.errstate(over="ignore", invalid="ignore"):
            return self._loss_grad_hess(theta, presence, hess)

    def _loss_grad_hess(self, theta, presence, hess):
        """Loss (B,), gradient (B, d) and Hessian (B, d, d) (None with ``hess=False``)
        of the negative log-likelihood at each row of ``theta`` (B, d), problem b
        weighted by ``weights * presence[b]`` (``presence``: None, a
        :class:`~coxinfluence.data.deletion.Deletion` over the caller's rows, or a (B, n)
        0/1 array). A row whose contribution is not finite makes its problem's loss inf
        (the Newton solver's step halving then backs off). The products over rows run in
        blocks of one BLAS thread (:mod:`coxinfluence.numerics.rows`): the same bits on any
        thread count, and no BLAS helper thread waiting for a core on a loaded machine."""
        data = self.data
        theta = np.atleast_2d(np.asarray(theta, dtype=np.float64))
        B, p = theta.shape[0], data.p
        P = presence_matrix(presence, data.n)
        W = np.broadcast_to(data.weights, (B, data.n)) if P is None else data.weights * P
        der = self.row_derivatives(theta, order=2 if hess else 1)
        lw = np.where(W > 0, W * der["l"], 0.0)
        loss = -lw.sum(axis=1)
        loss[~np.isfinite(loss)] = np.inf
        grad = np.empty((B, data.d))
        grad[:, :p] = -matmul_reduce_rows(np.ascontiguousarray((W * der["e"]).T), data.X)
        if not data.fixed_scale:
            grad[:, p:] = -self._per_stratum(W * der["s"])
        if not hess:
            return loss, grad, None
        H = np.zeros((B, data.d, data.d))
        Wee = W * der["ee"]
        for b in range(B):                       # -X' diag(W l_ee) X per problem
            H[b, :p, :p] = -matmul_reduce_rows(data.X, data.X, scale=Wee[b])
        if not data.fixed_scale:
            Wes = np.ascontiguousarray((W * der["es"]).T)                # (n, B)
            for k, (rows, Xk) in enumerate(self._blocks):
                cross = -matmul_reduce_rows(Wes[rows], Xk)                # (B, p)
                H[:, :p, p + k] = cross
                H[:, p + k, :p] = cross
            K = np.arange(data.n_strata)
            H[:, p + K, p + K] = -self._per_stratum(W * der["ss"])
        return loss, grad, H

    def objective(self, presence=None):
        """``objective(idx, theta) -> (loss, grad, hess)`` of the problems ``idx`` of the
        batch ``presence`` (None: every row, one problem for any ``idx``), for
        :func:`coxinfluence.numerics.newton.newton`."""
        P = presence_matrix(presence, self.data.n)

        def evaluate(idx, theta, hess=True):
            part = None if P is None else P[np.asarray(idx)]
            return self.loss_grad_hess(theta, part, hess=hess)

        return evaluate

    # ------------------------------------------------------ per-row derivatives
    def row_scores(self, theta):
        """(n, d) the gradient of each row's loss ``-l_i`` at ``theta`` (d,), without
        its case weight (R's score residuals are minus these)."""
        data = self.data
        der = self.row_derivatives(np.asarray(theta)[None, :])
        out = np.zeros((data.n, data.d))
        out[:, :data.p] = -der["e"][0][:, None] * data.X
        if not data.fixed_scale:
            out[np.arange(data.n), data.p + data.strata] = -der["s"][0]
        return out

    def row_hessians(self, theta, rows=None, weighted=False):
        """(m, d, d) the Hessian of each row's loss ``-l_i`` (rows ``rows``, default all)
        at ``theta``, times its case weight when ``weighted``: ``-l_ee x x'`` in the
        location block, ``-l_es x`` beside the row's own scale, ``-l_ss`` on that scale's
        diagonal."""
        data = self.data
        der = self.row_derivatives(np.asarray(theta)[None, :])
        rows = np.arange(data.n) if rows is None else np.asarray(rows)
        if weighted:
            der = {k: v * data.weights for k, v in der.items()}
        X, p, m = data.X[rows], data.p, rows.size
        out = np.empty((m, data.d, data.d))
        ee = -der["ee"][0][rows]
        for a in range(0, m, 4096):            # cache-sized blocks, one pass each
            Xb = X[a:a + 4096]
            np.multiply(Xb[:, :, None] * ee[a:a + 4096, None, None], Xb[:, None, :],
                        out=out[a:a + 4096, :p, :p])
        if p < data.d:
            out[:, p:, :] = 0.0
            out[:, :p, p:] = 0.0
        if not data.fixed_scale:
            at, k = np.arange(m), p + data.strata[rows]
            cross = -der["es"][0][rows][:, None] * X
            out[at, :p, k] = cross
            out[at, k, :p] = cross
            out[at, k, k] = -der["ss"][0][rows]
        return out

    def third_derivative(self, theta):
        """(d, d, d) the third derivative of the (weighted) loss at ``theta`` (d,):
        ``-sum_i w_i`` of ``l_eee x x x`` (location block), ``l_ees x x`` (each ordering of
        two location indices and the row's scale), ``l_ess x`` and ``l_sss`` (its scale
        alone). The location block as products ``(v x)' (x kron x)`` over blocks of rows of
        one BLAS thread."""
        data = self.data
        der = self.row_derivatives(np.asarray(theta)[None, :], order=3)
        w = -self.data.weights
        p, X = data.p, data.X
        T = np.zeros((data.d, data.d, data.d))
        eee, ees = w * der["eee"][0], w * der["ees"][0]
        K = 0 if data.fixed_scale else data.n_strata
        loc = np.zeros((p, p * p))
        mixed = np.zeros((K, p * p))
        step = max(1, (1 << 18) // (p * p * p))
        for a in range(0, data.n, step):
            Xb = X[a:a + step]
            Z = (Xb[:, :, None] * Xb[:, None, :]).reshape(-1, p * p)
            loc += (Xb * eee[a:a + step, None]).T @ Z
            if K:
                mixed += self._onehot[a:a + step].T @ (Z * ees[a:a + step, None])
        T[:p, :p, :p] = loc.reshape(p, p, p)
        if K:
            ess, sss = w * der["ess"][0], w * der["sss"][0]
            xs = matmul_reduce_rows(self._onehot, X, scale=ess)          # (K, p)
            for k in range(K):
                s = p + k
                M = mixed[k].reshape(p, p)
                T[:p, :p, s] = M
                T[:p, s, :p] = M
                T[s, :p, :p] = M
                T[:p, s, s] = xs[k]
                T[s, :p, s] = xs[k]
                T[s, s, :p] = xs[k]
                T[s, s, s] = sss[data.strata == k].sum()
        return T
