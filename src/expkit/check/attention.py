"""The seed's C2.4 check as a function: numpy causal attention against torch's
``scaled_dot_product_attention`` on the same seeded q, k, v, judged at the dtype's tolerance."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from expkit.errors import CheckFailed, UsageError

__all__ = ["AttentionCheck", "check_attention", "sdpa_causal"]


@dataclass(frozen=True)
class AttentionCheck:
    """``ok`` when ``max_abs_error <= tolerance`` (``atol + rtol * max|reference|``) and nothing is NaN."""

    shape: tuple[int, ...]
    dtype: str
    max_abs_error: float
    max_rel_error: float
    tolerance: float
    rtol: float
    atol: float
    ok: bool
    reason: str

    def raise_if_failed(self) -> None:
        """CheckFailed with the reason when the error is over tolerance."""
        if not self.ok:
            raise CheckFailed(f"attention: {self.reason}", hint=f"max abs error {self.max_abs_error:.3g}")


def sdpa_causal(q: Any, k: Any, v: Any) -> Any:
    """torch's fused attention with a causal mask: the reference every handwritten attention meets."""
    import torch.nn.functional as F

    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def check_attention(*, shape: Sequence[int], dtype: str = "float32", seed: int = 0) -> AttentionCheck:
    """Run ``expkit.check.causal_attention`` (numpy) and SDPA (torch) on the same inputs and compare.

    Args:
        shape: the shape of q, k and v: ``(B, T, D)`` or ``(B, H, T, D)``.
        dtype: ``float32`` or ``float64`` (numpy attention runs in those).
        seed: seed of the random q, k, v.

    Raises:
        UsageError: a dtype numpy attention does not run in, or a shape that is not 3 or 4 positive sizes.

    Example:
        >>> r = check_attention(shape=(2, 64, 32)); r.ok, r.max_abs_error < 1e-6   # doctest: +SKIP
        (True, True)
    """
    from expkit.check.against import AgainstQuery, against
    from expkit.check.reference import causal_attention

    if dtype not in ("float32", "float64"):
        raise UsageError(f"dtype {dtype!r}: numpy attention runs in float32 or float64")
    dims = tuple(int(d) for d in shape)
    if len(dims) not in (3, 4) or any(d <= 0 for d in dims):
        raise UsageError(
            f"shape {','.join(map(str, dims))} has {len(dims)} sizes; give B,T,D or B,H,T,D (positive sizes)"
        )
    query = AgainstQuery(shapes=[[dims] * 3], dtypes=[dtype], seed=seed, fn_backend="torch", reference_backend="numpy")
    rep = against(sdpa_causal, causal_attention, query)
    out = rep.cases[0].output
    return AttentionCheck(
        dims, dtype, out.max_abs_error, out.max_rel_error, out.tolerance, out.rtol, out.atol, out.ok, out.reason
    )
