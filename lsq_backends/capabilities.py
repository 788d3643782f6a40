"""What each entry point supports on each backend, declared once as data.

The documentation's table ("Backends and devices") is generated from `CAPABILITIES`
by `markdown_table`, and ``tests/test_capabilities.py`` checks every "yes" of the jit,
vmap, grad and Dask columns it can run on the machine at hand (and that every "no" fails),
so the table and the code cannot drift apart. The sharded column is checked by
``tests/test_sharded_jax.py`` (``normal``); host reads were counted on PyTorch on the CPU
(``lsq_backends.check.count_host_reads``; the direct methods in ``tests/test_host_reads.py``),
XLA:GPU's synchronizations with JAX on the CPU, by counting the predicates of the ``lax.cond``
and ``while_loop`` trips a compiled call executes (``tests/test_host_reads.py``, JAX session).
The torch-CUDA column lists the synchronizations torch makes inside its own operators, which no
CPU run sees, from torch's sources (the GPU self-check counts them as hidden).

Examples
--------
>>> from lsq_backends.capabilities import CAPABILITIES, supports
>>> supports("lstsq:lsqr", "dask_lazy")
False
>>> CAPABILITIES["lstsq:normal"]["host_reads"]
'1 (2 on a rank fallback)'
"""

from __future__ import annotations

# Columns, with the header the table gives them. Eager NumPy, CuPy, PyTorch (CPU and CUDA)
# and array-api-strict run every entry: they are not columns.
FEATURES = {
    "jit": "`jax.jit`",
    "vmap": "`jax.vmap`",
    "jax_grad": "`jax.grad`",
    "torch_autograd": "PyTorch autograd",
    "dask_lazy": "lazy on Dask",
    "sharded": "sharded JAX, X not gathered",
    "host_reads": "host reads per eager call",
    "torch_cuda_syncs": "torch-CUDA: more syncs",
    "xla_gpu_syncs": "XLA:GPU: syncs per eager call",
}
# The columns that count synchronizations (text), not supported features (yes/no).
COUNTS = ("host_reads", "torch_cuda_syncs", "xla_gpu_syncs")

_DIRECT = {"jit": True, "vmap": True, "jax_grad": True, "torch_autograd": True, "dask_lazy": True, "sharded": False}

_SVD = "+1 on a rank fallback (its SVD)"
CAPABILITIES = {
    "lstsq:normal": {
        **_DIRECT, "sharded": True, "host_reads": "1 (2 on a rank fallback)", "torch_cuda_syncs": _SVD,
        "xla_gpu_syncs": "2",
    },
    "lstsq:auto": {**_DIRECT, "host_reads": "1 (2 on the QR route)", "torch_cuda_syncs": _SVD, "xla_gpu_syncs": "3"},
    "lstsq:qr": {
        **_DIRECT, "host_reads": "1 (2 on the Householder route)", "torch_cuda_syncs": _SVD,
        "xla_gpu_syncs": "3 (4 past CholeskyQR2's gate)",
    },
    "lstsq:svd": {
        **_DIRECT, "host_reads": "1 (2 on the Householder route)", "torch_cuda_syncs": "+1 (the SVD)",
        "xla_gpu_syncs": "3 (2 past CholeskyQR2's gate)",
    },
    "lstsq:lsqr": {
        **_DIRECT,
        "dask_lazy": False,
        "host_reads": "1 per convergence test (every 10th iteration on a GPU)",
        "torch_cuda_syncs": "none",
        "xla_gpu_syncs": "2 + 1 per 10 iterations begun",
    },
    "lstsq:lsmr": {
        **_DIRECT,
        "dask_lazy": False,
        "host_reads": "1 per convergence test (every 10th iteration on a GPU)",
        "torch_cuda_syncs": "none",
        "xla_gpu_syncs": "2 + 1 per 10 iterations begun",
    },
    'lstsq:lsmr, precondition="columns"': {
        **_DIRECT,
        "dask_lazy": False,
        "host_reads": "as lsmr",
        "torch_cuda_syncs": "none",
        "xla_gpu_syncs": "as lsmr",
    },
    "lstsq (sparse X)": {
        **_DIRECT,
        "jax_grad": False,
        "torch_autograd": False,
        "dask_lazy": False,
        "host_reads": "as lsmr (a SciPy X: y copied to the host once, the results back)",
        "torch_cuda_syncs": "as lsmr",
        "xla_gpu_syncs": "as lsmr",
    },
    "ridge (path)": {**_DIRECT, "host_reads": "2", "torch_cuda_syncs": "+1 (eigh or SVD)", "xla_gpu_syncs": "2"},
    "ridge_cv": {
        **_DIRECT, "host_reads": "2 (leave-one-out and k-fold)", "torch_cuda_syncs": "+1 (eigh or SVD)",
        "xla_gpu_syncs": "2",
    },
    "diagnostics": {**_DIRECT, "host_reads": "2", "torch_cuda_syncs": "+1 (the SVD)", "xla_gpu_syncs": "2"},
    "nnls": {
        **_DIRECT,
        "jax_grad": False,
        "dask_lazy": False,
        "host_reads": "1 per convergence test (every 10th iteration on a GPU)",
        "torch_cuda_syncs": "none",
        "xla_gpu_syncs": "2 + 1 per 10 iterations begun",
    },
    "NormalAccumulator": {
        **_DIRECT, "host_reads": "3 (one update, then solve)", "torch_cuda_syncs": _SVD, "xla_gpu_syncs": "3",
    },
    "QRAccumulator": {
        **_DIRECT, "torch_autograd": False, "host_reads": "3 (one update, then solve)", "torch_cuda_syncs": _SVD,
        "xla_gpu_syncs": "3",
    },
}  # fmt: skip

# Notes on a cell (why a "no" is a no, how a "yes" is done), shown under the table.
NOTES = {
    (
        "lstsq:lsqr",
        "jax_grad",
    ): (
        "by implicit differentiation: K is applied by two more LSQR solves inside `lax.custom_linear_solve`"
        " (one penalty per target: one or two, by LSQR's per-column damping), not by unrolling the loop."
    ),
    (
        "ridge (path)",
        "jax_grad",
    ): "every penalty by the solution's derivative rule, from the path's one factorization (X, y and each alpha; PyTorch alike).",
    (
        "ridge_cv",
        "jax_grad",
    ): (
        "through its own steps, not the solution's rule: exact for the scores with respect to `alphas`;"
        " its coefficients may be NaN at rank deficiency."
    ),
    ("nnls", "jax_grad"): "its active-set iteration is a `lax.while_loop`, which has no reverse-mode rule.",
    ("nnls", "dask_lazy"): "the iteration computes every 10 iterations (its convergence test is read).",
    ("QRAccumulator", "torch_autograd"): "its updates call `geqrf`, which has no derivative in PyTorch.",
    ("lstsq:lsqr", "dask_lazy"): "the iteration computes every 10 iterations (its convergence test is read).",
    (
        "lstsq:lsmr",
        "jax_grad",
    ): "as `lstsq:lsqr`: K is applied by LSQR solves at the fit's tolerances inside `lax.custom_linear_solve`.",
    ("lstsq:lsmr", "dask_lazy"): "as `lstsq:lsqr`: the iteration computes every 10 iterations.",
    ('lstsq:lsmr, precondition="columns"', "jit"): (
        "`lsqr` alike, and sparse X where that row says so (a BCOO X's column norms from its entries, traced);"
        " an operator has no entries and is refused."
    ),
    ('lstsq:lsmr, precondition="columns"', "jax_grad"): (
        "the derivative of the solution, as `lstsq:lsmr` (the scaling changes the iteration, not the solution)."
    ),
    (
        "lstsq (sparse X)",
        "jit",
    ): "a JAX BCOO X, or an `lsq.operator` of JAX functions; a SciPy X cannot be traced (convert it to BCOO).",
    (
        "lstsq (sparse X)",
        "jax_grad",
    ): "no derivative rule for sparse or operator X: the `while_loop` has no reverse mode (nor the loop in PyTorch).",
    (
        "lstsq:auto",
        "sharded",
    ): "the QR branch of a fit and every rank fallback all-gather X (XLA does not partition a QR).",
    ("lstsq:qr", "host_reads"): (
        "float32 X past CholeskyQR2's gate (cond > ~30 in float32, 6.7e5 in float64) takes the 2 reads of"
        " the next route; past shifted CholeskyQR3's reach (cond ~1e7 in float32, ~1e11 in float64), 3."
    ),
    ("lstsq:auto", "host_reads"): (
        "the refined normal equations are kept up to cond ~13 in float32 (1e4 in float64) and a small"
        " residual: most float32 problems take the QR route's 2 reads."
    ),
    ("lstsq:normal", "torch_cuda_syncs"): (
        "torch's CUDA `svd` and `eigh` read cuSOLVER's error flag on the host, one synchronization each"
        " (`count_host_reads('torch-cuda')` counts them as hidden); its Cholesky (`cholesky_ex`) and"
        " triangular solves read nothing. The same holds for every row."
    ),
    ("lstsq:normal", "xla_gpu_syncs"): (
        "an eager JAX call reads its value checks once, then runs compiled; inside, XLA:GPU copies the"
        " predicate of every `lax.cond` executed (each route decision) and of every `while_loop` trip to"
        " the host. Counted on a well-conditioned float64 problem (`tests/test_host_reads.py`, JAX"
        " session); a rank fallback adds none. Under a caller's `jax.jit` the value-check read goes."
    ),
    ("lstsq:lsqr", "xla_gpu_syncs"): (
        "a traced loop runs 10 iterations a trip on accelerators (an inner loop of known trip count, whose"
        " predicate is not read), then `max_iter % 10` more."
    ),
}


def supports(entry, feature):
    """Whether ``entry`` (a key of `CAPABILITIES`) supports ``feature`` (a key of
    `FEATURES` other than the counts of `COUNTS`)."""
    if entry not in CAPABILITIES:
        msg = f"entry must be one of {sorted(CAPABILITIES)}; got {entry!r}"
        raise ValueError(msg)
    if feature not in FEATURES or feature in COUNTS:
        msg = f"feature must be one of {sorted(set(FEATURES) - set(COUNTS))}; got {feature!r}"
        raise ValueError(msg)
    return bool(CAPABILITIES[entry][feature])


def markdown_table():
    """The capability table as Markdown (the docs page embeds it)."""
    head = "| entry | " + " | ".join(FEATURES.values()) + " |"
    rows = [head, "|---" * (len(FEATURES) + 1) + "|"]
    for entry, caps in CAPABILITIES.items():
        cells = []
        for feature in FEATURES:
            value = caps[feature]
            cell = value if isinstance(value, str) else ("yes" if value else "no")
            if (entry, feature) in NOTES:
                cell += "*"
            cells.append(cell)
        rows.append(f"| `{entry}` | " + " | ".join(cells) + " |")
    notes = [f"- `{e}`, {FEATURES[f]}: {text}" for (e, f), text in NOTES.items()]
    return "\n".join(rows) + "\n\n" + "\n".join(notes) + "\n"
