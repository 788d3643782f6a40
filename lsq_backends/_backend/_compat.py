"""The layer that knows about individual array libraries: solvers call only this module, the
layer's front door (its names below, by topic; each part's docstring gives its quirks).

Every solver is written against the Python array API standard. The standard lacks a few things a
least-squares library needs: a triangular solve, a value-dependent branch that survives
``jax.jit``, full-precision matrix products on GPUs. And some libraries deviate from it. Each
branch below names the quirk it handles. Every function ends in a standard fallback, so that any
other array-API library works, only more slowly.

Nothing here imports JAX, PyTorch, CuPy or Dask at module level. A branch is taken only when
the caller's arrays come from that library, so the library is already imported.

The parts, each reached through this module:

- :mod:`._arrays`: namespaces, devices, dtypes and the library traits; the small whole-array
  operations the standard lacks or some library gets wrong;
- :mod:`._control`: ``branch``, ``loop``, ``jit``: branches and loops that survive tracing, and
  the value checks read with them;
- :mod:`._factorizations`: Cholesky, QR, SVD, eigh: each library's failure modes and its cheaper
  routes; the triangular solves and inverses on their factors, which the standard lacks;
- :mod:`._dask_blocks`: the NumPy code that runs inside Dask tasks;
- :mod:`._products`: products at full precision; the Krylov solvers' column norms and masked
  updates, the certificate's vectors, ``sign`` and ``clip``;
- :mod:`._precision`: full float32 products on PyTorch and CuPy, whatever the process-wide
  settings, reached through :mod:`._products`;
- :mod:`._devices`: constants made on the device, the input's device entered on CuPy;
- :mod:`._segments`: ``segment_sum``, sums of rows over integer codes (cluster covariances).
- :mod:`._sparse`: ``sparse_gram``, a sparse X's Gram matrix in its own library.
"""

from __future__ import annotations

from ._arrays import (
    Array,
    Namespace,
    Traits,
    align_rows,
    all_true,
    arg_best,
    array_namespace,
    as_rank,
    call_kind,
    choice_is_free,
    compiled,
    default_dtypes,
    device,
    diagonal,
    eager_jax,
    eps,
    finfo,
    finite_test,
    float64_for,
    float_errors_ignored,
    full,
    full_int,
    is_array,
    is_dense_tensor,
    is_host_array,
    is_readable,
    is_torch_sparse,
    isdtype,
    memo,
    minus_fresh,
    mT,
    normal_products,
    outside_jit,
    own_trace,
    plain_numpy,
    plain_tensors,
    positive_or_one,
    positive_or_zero,
    reduce_all,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_sum,
    sum_of_squares,
    take_rows,
    traits,
    update_fresh,
    zero_first_row,
)
from ._control import Checks, branch, deferred, flush_checks, is_lazy, jit, kept, loop, one_task, over_columns, read_now
from ._devices import constants, device_scope, exact_powers, eye_like, on_input_device, powers_of_two, to_numpy
from ._factorizations import (
    checked_cholesky,
    cho_solve,
    cholesky,
    cholesky_ex,
    eigh,
    inverse_diagonal,
    one_pass_qr,
    qr,
    qr_apply,
    qr_implicit,
    qr_r,
    solve_triangular,
    svd,
    triangular_inverse,
)
from ._products import (
    add_product,
    add_to_diagonal,
    clip,
    column_norms,
    column_squares,
    cross,
    dots,
    flat_concat,
    known_ones,
    matmul,
    multiply_add,
    nonzero_or_one,
    plain_namespace,
    select,
    sign,
    within,
)
from ._segments import prepare_segments, segment_sum
from ._small_stacks import SMALL_STACK, batch_last, small_inverse
from ._sparse import sparse_gram

__all__ = [
    # namespaces and devices
    "Array", "Namespace", "array_namespace", "call_kind", "choice_is_free", "device", "device_scope", "eager_jax",
    "is_array", "is_dense_tensor", "is_host_array", "is_lazy", "is_readable", "is_torch_sparse",
    "on_input_device", "outside_jit", "own_trace", "plain_namespace", "plain_numpy", "plain_tensors", "to_numpy",
    # traits and dtypes
    "Traits", "traits", "memo", "default_dtypes", "eps", "finfo", "float64_for", "isdtype",
    # control flow that survives tracing (_control)
    "Checks", "branch", "compiled", "deferred", "float_errors_ignored", "flush_checks", "jit", "kept", "loop", "one_task",
    "over_columns", "read_now",
    # arrays made and reduced
    "all_true", "align_rows", "arg_best", "as_rank", "constants", "diagonal", "exact_powers", "eye_like",
    "finite_test", "full", "full_int", "mT", "positive_or_one", "positive_or_zero", "powers_of_two", "reduce_all",
    "reduce_max", "reduce_mean", "reduce_min", "reduce_sum", "take_rows",
    # products, and chains written into temporaries (_products, _segments, _sparse)
    "add_product", "cross", "dots", "matmul", "minus_fresh", "multiply_add", "normal_products", "sum_of_squares",
    "update_fresh", "zero_first_row", "prepare_segments", "segment_sum", "sparse_gram",
    # factorizations and triangles (_factorizations)
    "SMALL_STACK", "batch_last", "checked_cholesky", "cho_solve", "cholesky", "cholesky_ex", "eigh",
    "inverse_diagonal", "one_pass_qr", "qr", "qr_apply", "qr_implicit", "qr_r", "small_inverse", "solve_triangular",
    "svd", "triangular_inverse",
    # the Krylov solvers' vectors (_products)
    "add_to_diagonal", "clip", "column_norms", "column_squares", "flat_concat", "known_ones", "nonzero_or_one",
    "select", "sign", "within",
]  # fmt: skip
