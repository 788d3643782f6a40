"""Matrix products at the full precision of the dtype: part of the :mod:`._compat` layer."""

from __future__ import annotations

import array_api_compat as _aac


def matmul(xp, a, b):
    """``a @ b`` at the full precision of the dtype.

    Quirk: on GPUs and TPUs JAX multiplies float32 matrices in TF32/bfloat16 passes by default,
    which destroys a Gram matrix (~3 correct digits). Ask for ``Precision.HIGHEST``.
    """
    if _aac.is_jax_namespace(xp):
        import jax

        return xp.matmul(a, b, precision=jax.lax.Precision.HIGHEST)
    return xp.matmul(a, b)
