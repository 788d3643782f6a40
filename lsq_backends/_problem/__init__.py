"""The problem as the solvers take it: validation, penalties, scaling, empty batches."""
