"""What each entry point supports on each backend, declared once as data.

The documentation's table ("Backends and devices") is generated from `CAPABILITIES`
by `markdown_table`, and ``tests/house/test_capabilities.py`` checks every "yes" of the jit,
vmap, grad and Dask columns it can run on the machine at hand (and that every "no" fails),
so the table and the code cannot drift apart. The sharded column is checked by
``tests/autodiff/test_sharded_jax.py`` (``normal``); host reads were counted on PyTorch on the CPU
(``lsq_backends.check.count_host_reads``; the direct methods in ``tests/budgets/test_host_reads.py``),
XLA:GPU's synchronizations with JAX on the CPU, by counting the predicates of the ``lax.cond``
and ``while_loop`` trips a compiled call executes (``tests/budgets/test_host_reads.py``, JAX session).
The torch-CUDA column lists the synchronizations torch makes inside its own operators, which no
CPU run sees, from torch's sources (the GPU self-check counts them as hidden).

Examples
--------
>>> from lsq_backends.capabilities import CAPABILITIES, supports
>>> supports("lstsq:lsqr", "dask_lazy")
False
>>> CAPABILITIES["lstsq:normal"]["host_reads"]
'1 (3 on a rank fallback)'
"""

from __future__ import annotations

from ._solvers import DIRECT_FEATURES, RECORDS, SVD_SYNC

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

CAPABILITIES = {
    # One row per method, from its record (``lsq_backends._solvers``), then the other entries.
    **{f"lstsq:{r.name}": dict(r.capabilities) for r in RECORDS},
    'lstsq:lsmr, precondition="columns"': {
        **DIRECT_FEATURES,
        "dask_lazy": False,
        "host_reads": "as lsmr",
        "torch_cuda_syncs": "none",
        "xla_gpu_syncs": "as lsmr",
    },
    "lstsq (sparse X)": {
        **DIRECT_FEATURES,
        "torch_autograd": False,
        "dask_lazy": False,
        "host_reads": "as lsmr (a SciPy X: y copied to the host once, the results back; by its Gram matrix, as normal)",
        "torch_cuda_syncs": "as lsmr",
        "xla_gpu_syncs": "as lsmr",
    },
    "ridge (path)": {**DIRECT_FEATURES, "host_reads": "2", "torch_cuda_syncs": "+1 (eigh or SVD)", "xla_gpu_syncs": "2"},
    "ridge_cv": {
        **DIRECT_FEATURES, "host_reads": "2 (leave-one-out and k-fold)", "torch_cuda_syncs": "+1 (eigh or SVD)",
        "xla_gpu_syncs": "2",
    },
    "diagnostics": {**DIRECT_FEATURES, "host_reads": "2", "torch_cuda_syncs": "+1 (the SVD)", "xla_gpu_syncs": "2"},
    "nnls": {
        **DIRECT_FEATURES,
        "jax_grad": False,
        "dask_lazy": False,
        "host_reads": "1 per convergence test (every 10th iteration on a GPU)",
        "torch_cuda_syncs": "none",
        "xla_gpu_syncs": "2 + 1 per 10 iterations begun",
    },
    "NormalAccumulator": {
        **DIRECT_FEATURES, "host_reads": "3 (one update, then solve)", "torch_cuda_syncs": SVD_SYNC, "xla_gpu_syncs": "3",
    },
    "QRAccumulator": {
        **DIRECT_FEATURES, "torch_autograd": False, "host_reads": "3 (one update, then solve)", "torch_cuda_syncs": SVD_SYNC,
        "xla_gpu_syncs": "3",
    },
}  # fmt: skip

# Notes on a cell (why a "no" is a no, how a "yes" is done), shown under the table.
NOTES = {
    # The methods' notes, from their records, then the other entries'.
    **{(f"lstsq:{r.name}", feature): text for r in RECORDS for feature, text in r.notes.items()},
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
    ): (
        "with respect to y on the Gram route of a BCOO X (`auto` up to 2048 columns, `normal`): JAX"
        " differentiates its operations; not with respect to X's entries or the weights, nor through LSMR/LSQR (no"
        " derivative rule for sparse or operator X: the `while_loop` has no reverse mode)."
    ),
    (
        "lstsq (sparse X)",
        "torch_autograd",
    ): "a y, X or weights that require grad are refused with a sparse or operator X.",
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
