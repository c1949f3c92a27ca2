"""Stage 2: judge results honestly.

intervals (a proportion, a difference), paired comparison of two models on the same items, power and
sample size, statistics over seeds, Holm's multiplicity correction, eval tables, and training curves
aggregated over seeds. Each submodule holds one concept; the names below are the public surface.
"""

from expkit.stats.intervals import (
    DifferenceInterval,
    ProportionInterval,
    clopper_pearson_interval,
    min_detectable_difference,
    newcombe_interval,
    proportion_interval,
    wald_interval,
    wilson_interval,
)
from expkit.stats.multiplicity import holm_adjust
from expkit.stats.paired import (
    BootstrapInterval,
    McNemarResult,
    PairedComparison,
    compare_models,
    compare_paired,
    mcnemar_test,
    paired_bootstrap,
)
from expkit.stats.power import PowerAnalysis, analyze_power, power_at, required_items
from expkit.stats.seeds import MeanInterval, SeedSummary, iqm, iqm_interval, summarize_seeds, t_interval, welch_interval
from expkit.stats.tables import EvalTable, build_eval_table, read_item_results

__all__ = [
    "BootstrapInterval",
    "DifferenceInterval",
    "EvalTable",
    "McNemarResult",
    "MeanInterval",
    "PairedComparison",
    "PowerAnalysis",
    "ProportionInterval",
    "SeedSummary",
    "analyze_power",
    "build_eval_table",
    "clopper_pearson_interval",
    "compare_models",
    "compare_paired",
    "holm_adjust",
    "iqm",
    "iqm_interval",
    "mcnemar_test",
    "min_detectable_difference",
    "newcombe_interval",
    "paired_bootstrap",
    "power_at",
    "proportion_interval",
    "read_item_results",
    "required_items",
    "summarize_seeds",
    "t_interval",
    "wald_interval",
    "welch_interval",
    "wilson_interval",
]
