"""What each entry point supports on each backend, declared once as data.

The documentation's table ("Backends and devices") is generated from `CAPABILITIES`
by `markdown_table`, and ``tests/test_capabilities.py`` checks every "yes" of the jit,
vmap, grad and Dask columns it can run on the machine at hand (and that every "no" fails),
so the table and the code cannot drift apart. The sharded column is checked by
``tests/test_sharded_jax.py`` (``normal``); host reads were counted on PyTorch on the CPU
(``lsq_backends.check.count_host_reads``; the direct methods in ``tests/test_host_reads.py``).

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
}

_DIRECT = {"jit": True, "vmap": True, "jax_grad": True, "torch_autograd": True, "dask_lazy": True, "sharded": False}

CAPABILITIES = {
    "lstsq:normal": {**_DIRECT, "sharded": True, "host_reads": "1 (2 on a rank fallback)"},
    "lstsq:auto": {**_DIRECT, "host_reads": "1 (2 on the QR route)"},
    "lstsq:qr": {**_DIRECT, "host_reads": "1 (2 on the Householder route)"},
    "lstsq:svd": {**_DIRECT, "host_reads": "1 (2 on the Householder route)"},
    "lstsq:lsqr": {
        **_DIRECT,
        "dask_lazy": False,
        "host_reads": "1 per convergence test (every 10th iteration on a GPU)",
    },
    "lstsq:lsmr": {
        **_DIRECT,
        "dask_lazy": False,
        "host_reads": "1 per convergence test (every 10th iteration on a GPU)",
    },
    "lstsq (sparse X)": {
        **_DIRECT,
        "jax_grad": False,
        "torch_autograd": False,
        "dask_lazy": False,
        "host_reads": "as lsmr (a SciPy X: y copied to the host once, the results back)",
    },
    "ridge (path)": {**_DIRECT, "host_reads": "2"},
    "ridge_cv": {**_DIRECT, "host_reads": "2 (leave-one-out and k-fold)"},
    "diagnostics": {**_DIRECT, "host_reads": "2"},
    "nnls": {
        **_DIRECT,
        "jax_grad": False,
        "dask_lazy": False,
        "host_reads": "1 per convergence test (every 10th iteration on a GPU)",
    },
    "NormalAccumulator": {**_DIRECT, "host_reads": "3 (one update, then solve)"},
    "QRAccumulator": {**_DIRECT, "torch_autograd": False, "host_reads": "3 (one update, then solve)"},
}

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
}


def supports(entry, feature):
    """Whether ``entry`` (a key of `CAPABILITIES`) supports ``feature`` (a key of
    `FEATURES` other than ``host_reads``)."""
    if entry not in CAPABILITIES:
        msg = f"entry must be one of {sorted(CAPABILITIES)}; got {entry!r}"
        raise ValueError(msg)
    if feature not in FEATURES or feature == "host_reads":
        msg = f"feature must be one of {sorted(set(FEATURES) - {'host_reads'})}; got {feature!r}"
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
