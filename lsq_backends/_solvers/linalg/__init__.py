"""The building blocks the methods share: Gram factorizations, QR, the SVD filter, rank and
condition tests, centering, X as data or as a linear map."""
