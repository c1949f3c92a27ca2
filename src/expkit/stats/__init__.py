"""Stage 2: judge results honestly (intervals for proportions; more in later modules)."""

from expkit.stats.intervals import (
    DifferenceInterval,
    newcombe_interval,
    ProportionInterval,
    clopper_pearson_interval,
    min_detectable_difference,
    proportion_interval,
    wald_interval,
    wilson_interval,
)

__all__ = [
    "DifferenceInterval",
    "newcombe_interval",
    "ProportionInterval",
    "clopper_pearson_interval",
    "min_detectable_difference",
    "proportion_interval",
    "wald_interval",
    "wilson_interval",
]
