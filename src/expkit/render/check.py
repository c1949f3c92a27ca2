"""``expkit check`` on the console: one row per case (and per input gradient), the attention line."""

from __future__ import annotations

from typing import TYPE_CHECKING

from expkit.render.console import fitted_table, out_console

if TYPE_CHECKING:
    from expkit.check.against import AgainstReport
    from expkit.check.attention import AttentionCheck

__all__ = ["render_against", "render_attention"]


def render_against(report: AgainstReport) -> None:
    """``shapes (out|grad i)``, dtype, max abs / rel error, tolerance with its source, worst index, ok."""
    t = fitted_table(
        "shapes", "dtype", "max abs error", "max rel error", "tolerance", "worst index", "ok",
        title=f"{report.fn} vs {report.reference}",
    )  # fmt: skip
    for c in report.cases:
        rows = [("out", c.output)] + [(f"grad {i}", g) for i, g in enumerate(c.grads)]
        shapes = " ".join("x".join(map(str, s)) for s in c.shapes)
        for label, r in rows:
            t.add_row(
                f"{shapes} ({label})",
                c.dtype,
                f"{r.max_abs_error:.3g}",
                f"{r.max_rel_error:.3g}",
                f"{r.tolerance:.3g} ({r.tolerance_source})",
                str(r.worst_index),
                "yes" if r.ok else f"NO: {r.reason}",
            )
    out_console().print(t)


def render_attention(out: AttentionCheck) -> None:
    """``numpy causal attention vs torch SDPA, shape 2,64,32 float32: max abs error ... : ok``."""
    print(
        f"numpy causal attention vs torch SDPA, shape {','.join(map(str, out.shape))} {out.dtype}: "
        f"max abs error {out.max_abs_error:.3g} (tolerance {out.tolerance:.3g} = atol {out.atol:g} + "
        f"rtol {out.rtol:g} * max|ref|): {'ok' if out.ok else 'OVER TOLERANCE'}"
    )
