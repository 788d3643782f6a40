"""Ridge over a grid of penalties: paths, leave-one-out and k-fold cross-validation, scoring."""
