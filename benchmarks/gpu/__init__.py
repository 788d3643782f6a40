"""The GPU check: ``python -m benchmarks.gpu`` (see :mod:`benchmarks.gpu.__main__`)."""
