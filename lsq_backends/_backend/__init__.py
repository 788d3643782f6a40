"""The array-library layer: every difference between NumPy, CuPy, JAX, PyTorch, Dask and
array-api-strict lives here (``_compat`` is its one entry; the other modules are its parts)."""
