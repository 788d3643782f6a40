"""What the scikit-learn estimators share."""
