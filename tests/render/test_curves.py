"""draw_curves writes a real PNG/SVG with log x, the seed count in the legend and a difference panel."""

from __future__ import annotations

import numpy as np

from expkit.render.curves import draw_curves
from expkit.stats.curves import Curve, summarize_curves


def _set(groups=2, seeds=3):
    rng = np.random.default_rng(0)
    x = np.arange(0, 50, dtype=float)
    curves = [
        Curve(f"{g}{s}", f"g{g}", x, 2.0 / (x + 1) + 0.1 * g + rng.normal(0, 0.01, x.size), "t")
        for g in range(groups)
        for s in range(seeds)
    ]
    return summarize_curves(curves, metric="loss", x_key="step", ema=0.5)


def test_png_with_difference_panel(tmp_path):
    path = draw_curves(_set(), tmp_path / "c.png")
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_svg_has_log_axis_seed_label_and_no_diff_for_one_group(tmp_path):
    svg = draw_curves(_set(), tmp_path / "c.svg").read_text()
    assert "mean of 3 seeds, 95% t-band" in svg
    assert "interval excludes 0" in svg and "g0 - g1" in svg
    one = draw_curves(_set(groups=1), tmp_path / "one.svg").read_text()
    assert "difference in loss" not in one
    # log x: matplotlib writes the decade tick labels as 10^k (mathtext), linear x writes plain numbers
    assert "10^{1}" in svg or "10^1" in svg or "$\\mathdefault{10^{1}}$" in svg
