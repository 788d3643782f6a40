"""X as a linear map: sparse matrices, operators and callables for the Krylov solvers.

Part of the backend layer. ``lsmr`` and ``lsqr`` touch X only through ``X @ V`` and
``X^T @ U`` on blocks of k columns (``_solvers._krylov``), so anything with those two products
serves: a :class:`LinearMap`. :func:`linear_map` makes one of what users hold, each in the
library that can multiply it (its *home*):

- SciPy sparse matrices and arrays (CSR, CSC, COO; other formats as CSR) and
  ``scipy.sparse.linalg.LinearOperator``: NumPy (``X.T @ U`` reads CSR as CSC, no copy);
- PyTorch sparse COO, CSR and CSC tensors: PyTorch, on their device;
- ``jax.experimental.sparse`` BCOO and BCSR: JAX (traced under ``jax.jit``, batched by ``vmap``);
- ``cupyx.scipy.sparse`` matrices: CuPy, on the GPU;
- :class:`Operator` (``lsq_backends.operator``): a pair of callables, in y's library.

``fit_intercept`` and ``sample_weight`` never densify X: :func:`centered` applies the
centered, row-weighted ``diag(r) (X - 1 mu)`` as X's products plus a rank-one correction,
and knows that matrix's column norms (for ``precondition="columns"``) from X's squared
entries, without forming it.

``column_norms_of``: with ``x_mean`` (the weighted means),
``||x_j - mu_j||_w^2 = ||x_j||_w^2 - (sum w) mu_j^2``: a difference of two sums, each with a
relative error up to ~m eps. Centering may remove all but ``sqrt(eps)`` of the column's sum of
squares (its mean over 1e4 times its spread, or a constant column). The difference is then not
resolved, and the norm is given as 0: such a column is left unscaled. Elsewhere the norm is
within ~m sqrt(eps) (1.5% at m = 1e6) of the exact one; a preconditioner needs no more.
"""

from __future__ import annotations

import sys
from typing import Any

import array_api_compat as _aac

from .._backend import _compat

__all__ = [
    "LinearMap",
    "Operator",
    "centered",
    "column_norms_of",
    "describe",
    "entry_dtype",
    "entry_magnitude",
    "finite_entries",
    "has_entries",
    "has_gram",
    "home_of",
    "is_operator_input",
    "linear_map",
    "on_host",
    "operator",
]


class LinearMap:
    """X (..., m, n) known only through block products, ``products = (matvec, rmatvec)`` or ``(matvec, rmatvec,
    gram)``: ``matvec(V)`` = X @ V
    for V (..., n, k) and ``rmatvec(U)`` = X^T @ U for U (..., m, k), both arrays of the solving namespace ``xp``
    on ``device``. ``shape``, ``dtype`` and ``device`` stand in for an array's.

    ``squares(U)``, where X's entries are known (a sparse matrix), returns ``(S^T @ U, c)``:
    ``S`` the squares of X's entries divided by ``c_j**2`` (``c`` (n,) the largest magnitude
    in each column, so that no square overflows or underflows), the column sums of squares of
    a row-weighted X; None for an operator. ``norms()`` returns X's column norms (1, n) (None where unknown).
    ``fresh``: the products return new arrays, which the caller may write into (a sparse
    matrix's; not a user's callables, whose results may be held elsewhere). ``gram()``, where X's entries are known
    (a sparse matrix), returns ``X^T X`` as a dense (n, n) array, formed by a sparse product (None: unknown);
    ``gram(w)`` the weighted ``X^T diag(w) X`` (w (m, 1))."""

    ndim = 2

    def __init__(self, xp, shape, dtype, device, products, squares=None, norms=None, fresh=False):
        self.xp: Any = xp
        self.shape = tuple(shape)
        self.dtype = dtype
        self.device = device
        self._matvec, self._rmatvec = products[:2]
        self.gram = products[2] if len(products) > 2 else None
        self.squares = squares
        self._norms = norms
        self.fresh = fresh

    def matvec(self, V):
        return self._matvec(V)

    def rmatvec(self, U):
        return self._rmatvec(U)

    def norms(self):
        if self._norms is not None:
            return self._norms()
        return column_norms_of(self.xp, self, None, None)


class Operator:
    """X given by its products, as :func:`operator` makes it."""

    def __init__(self, matvec, rmatvec, shape, dtype, blocks):
        self.matvec, self.rmatvec, self.shape, self.dtype, self.blocks = matvec, rmatvec, shape, dtype, blocks

    def __repr__(self):
        return f"operator(shape={self.shape}, dtype={self.dtype}, blocks={self.blocks})"


def operator(matvec, rmatvec, shape, dtype=None, *, blocks=False):
    """A matrix-free X for ``method="lsmr"``/``"lsqr"``: ``matvec(v)`` returns ``X @ v`` and
    ``rmatvec(u)`` returns ``X^T @ u``.

    Parameters
    ----------
    matvec, rmatvec : callable
        Linear functions of arrays of y's library (JAX functions work under ``jax.jit``).
        With ``blocks=False`` each gets one vector, ``v`` of shape (n,) and ``u`` of shape
        (m,), and is called once per target column; with ``blocks=True`` a block of them,
        (n, k) and (m, k), and must return (m, k) and (n, k).
    shape : tuple (m, n)
    dtype : float dtype, optional
        The dtype of X's entries; default y's float dtype.
    blocks : bool
        Whether the callables take blocks of columns.

    Examples
    --------
    >>> import numpy as np
    >>> import lsq_backends as lsq
    >>> d = np.arange(1.0, 6.0)  # X = diag(d), never formed
    >>> X = lsq.operator(lambda v: d * v, lambda u: d * u, shape=(5, 5))
    >>> r = lsq.lstsq(X, np.ones(5), method="lsmr", atol=1e-12, btol=1e-12)
    >>> np.allclose(r.coef, 1 / d)
    True
    """
    if not (callable(matvec) and callable(rmatvec)):
        msg = f"matvec and rmatvec must be callables; got {type(matvec).__name__} and {type(rmatvec).__name__}"
        raise TypeError(msg)
    ok = isinstance(shape, tuple) and len(shape) == 2
    if not ok or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in shape):
        msg = f"shape must be a tuple of two non-negative integers (m, n); got {shape!r}"
        raise ValueError(msg)
    if not isinstance(blocks, bool):
        msg = f"blocks must be a bool; got {blocks!r}"
        raise TypeError(msg)
    return Operator(matvec, rmatvec, shape, dtype, blocks)


def _scipy_sparse(X):
    sparse = sys.modules.get("scipy.sparse")
    return sparse is not None and sparse.issparse(X)


def _scipy_operator(X):
    linalg = sys.modules.get("scipy.sparse.linalg")
    return linalg is not None and isinstance(X, linalg.LinearOperator)


def _jax_sparse(X):
    sparse = sys.modules.get("jax.experimental.sparse")
    return sparse is not None and isinstance(X, sparse.JAXSparse)


def _cupy_sparse(X):
    sparse = sys.modules.get("cupyx.scipy.sparse")
    return sparse is not None and sparse.issparse(X)


def is_operator_input(X):
    """True for an X the Krylov methods take as a :class:`LinearMap` (not a dense array)."""
    return isinstance(X, Operator) or any(
        test(X) for test in (_scipy_sparse, _scipy_operator, _compat.is_torch_sparse, _jax_sparse, _cupy_sparse)
    )


def has_entries(X):
    """True for a sparse matrix (its entries give its column norms), False for an operator."""
    return not (isinstance(X, Operator) or _scipy_operator(X))


def has_gram(X):
    """True where :func:`linear_map` gives X a Gram product (``LinearMap.gram``): a sparse matrix of SciPy,
    PyTorch, JAX or CuPy (not an operator, which has no entries)."""
    return is_operator_input(X) and has_entries(X)


def describe(X):
    """What X is, for messages: ``SciPy sparse csr_array``, ``operator(...)``, ..."""
    if isinstance(X, Operator):
        return repr(X)
    if _scipy_sparse(X):
        return f"SciPy sparse {type(X).__name__}"
    if _compat.is_torch_sparse(X):
        return f"PyTorch {str(X.layout).replace('torch.', '')} tensor"
    return f"{type(X).__module__}.{type(X).__name__}"


def on_host(X):
    """True for the SciPy kinds: multiplied by NumPy, whatever y's library (y is copied to the
    host and the results back)."""
    return _scipy_sparse(X) or _scipy_operator(X)


def home_of(X):
    """``(xp, device)`` of the library that multiplies X, or None for an :class:`Operator`
    (it multiplies in y's library)."""
    if isinstance(X, Operator):
        return None
    if _scipy_sparse(X) or _scipy_operator(X):
        import numpy as np

        return _aac.array_namespace(np.empty(0)), "cpu"
    if _compat.is_torch_sparse(X):
        import torch

        return _aac.array_namespace(torch.empty(0)), X.device
    if _jax_sparse(X):
        import jax.numpy as jnp

        return jnp, None
    import cupy

    with cupy.cuda.Device(X.device):
        return _aac.array_namespace(cupy.empty(0)), X.device


def entry_dtype(X, xp):
    """The dtype of X's entries as a dtype of ``xp`` (an operator's may be given as another
    library's, e.g. ``numpy.float64`` next to torch y), or None when not given."""
    dtype = getattr(X, "dtype", None)
    if dtype is None or not isinstance(X, Operator):
        return dtype
    import numpy as np

    try:
        name = np.dtype(dtype).name  # NumPy's and JAX's dtypes, Python's float
    except TypeError:
        name = np.dtype(str(dtype).replace("torch.", "")).name  # torch.float64 -> "float64"
    if not hasattr(xp, name):
        msg = f"the operator's dtype must be a float or integer dtype; got {dtype!r}"
        raise TypeError(msg)
    return getattr(xp, name)


def finite_entries(X, magnitude=None):
    """A 0-d boolean array: X's stored entries are finite (None where they cannot be read: an
    operator, or a traced JAX array). ``magnitude``: :func:`entry_magnitude` of X where the
    caller has it (a SciPy matrix's test then reads it, not the values again)."""
    if _scipy_sparse(X):
        import numpy as np

        # NaN and infinity reach the largest magnitude: no boolean temporary of nnz entries
        return np.isfinite(entry_magnitude(X) if magnitude is None else magnitude)
    if _compat.is_torch_sparse(X):
        import torch

        values = X.coalesce().values() if X.layout == torch.sparse_coo else X.values()
        return torch.isfinite(values).all()
    if _jax_sparse(X):
        import jax

        return None if isinstance(X.data, jax.core.Tracer) else jax.numpy.isfinite(X.data).all()
    if _cupy_sparse(X):
        import cupy

        return cupy.isfinite(X.data).all()
    return None


def entry_magnitude(X):
    """A 0-d array: the largest magnitude among X's stored entries (None where they cannot be
    read: an operator). Duplicate entries are not summed: a bound within their count, enough
    to choose a power-of-two scale."""
    if _scipy_sparse(X):
        import numpy as np

        # the larger of |max| and |min|: two reads of the values, no |X.data| temporary
        return np.maximum(np.abs(X.data.max(initial=0)), np.abs(X.data.min(initial=0)))
    if _compat.is_torch_sparse(X):
        import torch

        values = X._values() if X.layout == torch.sparse_coo else X.values()
        return torch.max(values.abs()) if values.numel() else torch.zeros((), dtype=values.dtype)
    if _jax_sparse(X):
        import jax.numpy as jnp

        return jnp.max(jnp.abs(X.data), initial=0.0)
    if _cupy_sparse(X):
        import cupy

        return cupy.max(cupy.abs(X.data)) if X.data.size else cupy.zeros((), dtype=X.data.dtype)
    return None


def _cast(X, dtype):
    """X (a sparse matrix of its home library) with entries of ``dtype`` (a copy of its
    non-zeros where the dtype differs)."""
    if X.dtype == dtype:
        return X
    if _compat.is_torch_sparse(X):
        return X.to(dtype)
    return X.astype(dtype)


def linear_map(X, xp, dtype, device):
    """X as a :class:`LinearMap` of ``xp`` (its home, see :func:`home_of`; y's library for an
    :class:`Operator`) in ``dtype``."""
    m, n = (int(s) for s in X.shape)
    if isinstance(X, Operator):
        products = _columns(xp, X.matvec, m, X.blocks, "matvec"), _columns(xp, X.rmatvec, n, X.blocks, "rmatvec")
        return LinearMap(xp, (m, n), dtype, device, products)
    if _scipy_operator(X):
        return LinearMap(xp, (m, n), dtype, device, (X.matmat, X.rmatmat))
    X = _cast(X, dtype)
    if _scipy_sparse(X):
        if X.format not in ("csr", "csc"):
            X = X.tocsr()  # COO and the rest: one conversion, O(nnz)
        Xt = X.T  # CSR read as CSC: no copy
    elif _compat.is_torch_sparse(X):
        Xt = X.mT  # COO: indices swapped; CSR as CSC and back
    else:
        if _jax_sparse(X) and (type(X).__name__ == "BCSR" or X.n_batch or X.n_dense):
            from jax.experimental import sparse

            # BCSR, and batch or dense axes, have no transpose: as a plain BCOO, O(nnz) (padded batches)
            X = sparse.bcoo_update_layout(X.to_bcoo() if type(X).__name__ == "BCSR" else X, n_batch=0, n_dense=0)
        Xt = X.T  # BCOO: indices swapped; cupyx: as SciPy

    def squares(U):
        S, c = _squared(X)  # built when asked (preconditioning): nnz more entries
        return S.T @ U, c

    def gram(w=None):
        return _compat.sparse_gram(X, w)  # by a sparse product: O(nnz + n**2) memory, never O(m n)

    products = (lambda V: X @ V, lambda U: Xt @ U, gram)
    return LinearMap(xp, (m, n), dtype, device, products, squares, fresh=True)


def _squared(X):
    """``(S, c)``: X's entries (duplicates summed first) divided by ``c`` (n,), the largest
    magnitude in their column (0 for a column with none), and squared, as a sparse matrix of
    X's library; so no square overflows, nor underflows for the spread of another column. X is
    not modified (the duplicates are summed in a copy)."""
    n = X.shape[1]
    if _compat.is_torch_sparse(X):
        import torch

        C = X.to_sparse_coo().coalesce()
        v, cols = C.values(), C.indices()[1]
        c = torch.zeros(n, dtype=v.dtype, device=v.device).scatter_reduce(0, cols, v.abs(), "amax")
        v = v / torch.where(c > 0, c, torch.ones_like(c))[cols]
        return torch.sparse_coo_tensor(C.indices(), v * v, C.shape, is_coalesced=True), c
    if _jax_sparse(X):
        import jax
        import jax.numpy as jnp
        from jax.experimental import sparse

        C = X.to_bcoo() if isinstance(X, sparse.BCSR) else X
        C = C.sum_duplicates(nse=C.nse)  # a static size: traceable; padding entries are 0, out of range
        cols = C.indices[:, 1]
        c = jnp.maximum(jax.ops.segment_max(jnp.abs(C.data), cols, num_segments=n), 0)  # empty: -inf
        v = C.data / jnp.where(c > 0, c, 1)[jnp.minimum(cols, n - 1)]
        return sparse.BCOO((v * v, C.indices), shape=C.shape), c
    C = X.tocsr()  # SciPy and cupyx: the same interface; CSR as it is, no copy
    if not C.has_canonical_format:
        C = C.copy()
        C.sum_duplicates()
    xp = _aac.array_namespace(C.data)
    a = xp.abs(C.data)
    if _scipy_sparse(X):  # NumPy: a scatter (SciPy's max(axis=0) converts all of X to CSC)
        import numpy as np

        c = np.zeros(n, dtype=a.dtype)
        np.maximum.at(c, C.indices, a)
    else:
        c = xp.reshape(xp.asarray(abs(C).max(axis=0).toarray(), dtype=a.dtype), (n,))
    a = _compat.update_fresh(xp, a, "divide", xp.where(c > 0, c, xp.ones_like(c))[C.indices])
    return type(C)((_compat.update_fresh(xp, a, "multiply", a), C.indices, C.indptr), shape=C.shape), c


def _columns(xp, fn, rows, blocks, name):
    """A user's callable as a block product: called on the block, or once per column."""

    def checked(out, shape):
        if tuple(out.shape) != shape:
            msg = f"{name} returned shape {tuple(out.shape)}; expected {shape}"
            raise ValueError(msg)
        return out

    def product(V):
        k = V.shape[-1]
        if blocks:
            return checked(fn(V), (rows, k))
        return xp.stack([checked(fn(V[:, j]), (rows,)) for j in range(k)], axis=-1)

    return product


def column_norms_of(xp, A, root, x_mean):
    """The column norms (1, n) of ``diag(root) (A - 1 x_mean)`` (as :func:`centered`) from A's squared entries
    (``A.squares``), never forming the matrix; None for an operator. Within ~m sqrt(eps) of the exact norms, and 0
    where centering leaves less than ``sqrt(eps)`` of a column's sum of squares (see the module docstring)."""
    if A.squares is None:
        return None
    m = A.shape[0]
    w = xp.ones((m, 1), dtype=A.dtype, device=A.device) if root is None else root * root
    sq, c = A.squares(w)
    sq, c = xp.linalg.matrix_transpose(sq), c[None, :]  # (1, n), in units of c**2
    if x_mean is not None:
        mu = x_mean / xp.where(c > 0, c, xp.ones_like(c))
        centred = sq - xp.sum(w) * (mu * mu)
        resolved = centred > float(xp.finfo(A.dtype).eps) ** 0.5 * sq
        sq = xp.where(resolved, centred, xp.zeros_like(sq))
    return c * xp.sqrt(sq)


def centered(xp, A, root, x_mean):
    """The products of ``diag(root) (A - 1 x_mean)`` (``root``: sqrt of the weights (m, 1) or
    None; ``x_mean`` (1, n) or None): X's products and a rank-one correction, never X - mean.
    Its ``norms()`` are :func:`column_norms_of`'s."""
    if root is None and x_mean is None:
        return A

    def matvec(V):
        out = A.matvec(V)
        if x_mean is not None:
            out = out - _compat.matmul(xp, x_mean, V)
        return out if root is None else root * out

    def rmatvec(U):
        if root is not None:
            U = root * U
        out = A.rmatvec(U)
        if x_mean is not None:
            out = out - _compat.matmul(xp, xp.linalg.matrix_transpose(x_mean), xp.sum(U, axis=0, keepdims=True))
        return out

    def norms():
        return column_norms_of(xp, A, root, x_mean)

    gram = None
    if A.gram is not None:

        def gram(w=None):
            # (X - 1 mu)^T W (X - 1 mu) = X^T W X - (sum w) mu^T mu, mu the weighted means: a rank-one correction
            weights = None if root is None else root * root
            G = A.gram(weights)
            if x_mean is None:
                return G
            total = xp.sum(weights) if root is not None else A.shape[0]
            return G - total * (xp.linalg.matrix_transpose(x_mean) * x_mean)

    return LinearMap(xp, A.shape, A.dtype, A.device, (matvec, rmatvec, gram), norms=norms, fresh=A.fresh)
