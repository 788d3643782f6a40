"""The Gram matrix ``X^T diag(w) X`` of a sparse X, dense (n, n), never X densely: part of the
:mod:`._compat` layer.

Each library with a sparse type forms it its own way; memory O(nnz + n**2) in all of them:

- SciPy and CuPy (``cupyx.scipy.sparse``, the same interface): the rows weighted by a diagonal
  matrix (O(nnz)), then a sparse times sparse product, whose result has at most n**2 entries.
- PyTorch: its sparse times sparse product takes COO (``torch.sparse.mm``); CSR and CSC are
  converted (O(nnz)), and the weights scale the values of the copy.
- JAX: its sparse times sparse product (``bcoo_spdot_general``) forms every pair of stored
  entries, nnz**2 of them. Here the entries, sorted by row, are paired with the entry d places
  on in a ``while_loop`` over d = 1, 2, ...: a pair in the same row adds ``w x_ij x_ik`` at
  (j, k) and (k, j); the loop ends at the first d with no pair (sorted rows: none further).
  Memory O(nnz + n**2), time O(nnz) times the most entries in a row, no host read (traceable,
  compiled once per shape when called eagerly). Duplicate entries need no summing first:
  their pairs add the cross terms of the square of their sum.
"""

from __future__ import annotations

import functools
import sys

__all__ = ["sparse_gram"]


def sparse_gram(X, w=None):
    """``X^T diag(w) X`` (n, n) as a dense array of X's library, for a sparse X (m, n) of SciPy,
    CuPy, PyTorch or JAX (BCOO, BCSR) and weights ``w`` (m, 1) of that library or None (all 1)."""
    module = type(X).__module__
    if module.startswith("torch"):
        return _torch_gram(X, w)
    if module.startswith("jax"):
        return _jax_gram()(X, None if w is None else w[:, 0])
    # SciPy and cupyx.scipy.sparse: one interface; the diagonal from X's own sparse module
    sparse = sys.modules["cupyx.scipy.sparse" if module.startswith("cupyx") else "scipy.sparse"]
    diags = getattr(sparse, "diags_array", sparse.diags)
    Xw = X if w is None else diags(w[:, 0]) @ X  # rows weighted: O(nnz)
    return (X.T @ Xw).toarray()  # sparse times sparse: O(nnz + n**2) memory, never O(m n)


def _torch_gram(X, w):
    """PyTorch: ``torch.sparse.mm`` of COO tensors (module docstring)."""
    import torch

    C = X.to_sparse_coo().coalesce()
    i, v = C.indices(), C.values()
    if w is not None:
        v = v * w[:, 0][i[0]]
    Cw = torch.sparse_coo_tensor(i, v, C.shape, is_coalesced=True, check_invariants=False)
    return torch.sparse.mm(C.t(), Cw).to_dense()


@functools.cache
def _jax_gram():
    """JAX: the pairs of entries in a row by a ``while_loop``, jitted (module docstring)."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import sparse

    def gram(X, w):
        C = X.to_bcoo() if isinstance(X, sparse.BCSR) else X
        m, n = C.shape
        rows, cols, v = C.indices[:, 0], C.indices[:, 1], C.data
        if not C.indices_sorted:
            order = jnp.argsort(rows, stable=True)
            rows, cols, v = rows[order], cols[order], v[order]
        vw = v if w is None else v * w[jnp.minimum(rows, m - 1)]  # padding entries: row m, value 0
        G = jnp.zeros((n, n), dtype=v.dtype).at[cols, cols].add(vw * v, mode="drop")
        idx = jnp.arange(v.shape[0])

        def pairs(state):
            d, G, _ = state
            j = jnp.minimum(idx + d, v.shape[0] - 1)
            same = (idx + d < v.shape[0]) & (rows[j] == rows) & (rows < m)
            t = jnp.where(same, vw * v[j], 0)
            G = G.at[cols, cols[j]].add(t, mode="drop").at[cols[j], cols].add(t, mode="drop")
            return d + 1, G, jnp.any(same)

        return jax.lax.while_loop(lambda s: s[2], pairs, (jnp.asarray(1), G, jnp.asarray(v.shape[0] > 1)))[1]

    return jax.jit(gram)
