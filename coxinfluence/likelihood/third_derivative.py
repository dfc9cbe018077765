"""The third derivative of the Cox loss, for the exact refits' Halley start and the
second-order flags."""
from __future__ import annotations

import numpy as np

from coxinfluence.numerics.rows import matmul_reduce_rows


def third_derivative(risk_sets, theta, block=512):
    """Third derivative ``T[a, b, c]`` (d, d, d) of the loss at ``theta`` (all rows).

    Each term's ``log den`` has the third cumulant of ``x`` under the term's (Efron)
    risk-set weights as its third derivative, so

        T = sum_k m_k [M3_k - a_k (x) M2_k (three ways) + 2 a_k (x) a_k (x) a_k],

    ``M2_k``, ``M3_k`` the term's second and third moments; the sums over terms of
    ``m_k M3_k`` and ``m_k a_k (x) M2_k`` are rewritten as sums over rows (as
    :meth:`RiskSets.row_coefficients` does for ``S1`` and ``S2``), O(n d^3) in blocks of rows.
    The refits' warm start uses it
    (:func:`coxinfluence.influence_functions.engine_refits.halley_start`)."""
    data = risk_sets.data
    d = data.d
    # the risk-set state at theta (kept for theta_hat by the kernels: an audit's VIF,
    # flags and refits share it)
    st = risk_sets.state(np.asarray(theta, dtype=np.float64).reshape(d))
    m, a = st.mean_weight, st.term_mean                                  # (K,), (K, d)
    # per row: r_j sum_{k holds j} q_k v_jk [1, a_k], the row coefficients of S1 (and
    # S2, S3) and the row weights of a_k (x) M2_k
    S = risk_sets.totals_at_rows(st.totals_q_qa)[0]
    # M3 - (P three ways), P = sum_j A_j (x) x_j x_j', is the symmetrisation of
    # sum_j (c_j x_j - 3 A_j) (x) x_j x_j' (M3 is symmetric, P in its last two indices):
    # one product over the rows instead of two
    V = st.risk[:, None] * (S[:, :1] * data.X - 3.0 * S[:, 1:])          # (n, d)
    half = _moment(V, data.X, block) + 2.0 * _moment(m[:, None] * a, a, block)
    half = half.reshape(d, d, d)
    return (half + half.transpose(1, 0, 2) + half.transpose(1, 2, 0)) / 3.0


def _moment(V, X, block):
    """(d, d * d) ``sum_j v_j (x) x_j x_j'`` in blocks of ``block`` rows, their outer
    products formed in one work array (cache-sized: no fresh pages per block)."""
    d = X.shape[1]
    out = np.zeros((V.shape[1], d * d))
    work = np.empty((min(block, X.shape[0]), d, d))
    for s in range(0, X.shape[0], block):
        xs = X[s:s + block]
        # einsum forms the outer products about twice as fast as broadcasting here
        outer = np.einsum("ni,nj->nij", xs, xs, out=work[:xs.shape[0]])
        out += matmul_reduce_rows(V[s:s + block], outer.reshape(-1, d * d))
    return out
