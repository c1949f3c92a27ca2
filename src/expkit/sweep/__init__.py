"""Many runs: configs x seeds as recorded runs on a local pool of processes or on Ray, and the verdict on
"is A better than B" measured against the seed-to-seed spread.

    plan = plan_sweep(["expkit", "train", "charlm", "--minutes", "0.1"], group="lr", grid=["lr_max=1e-3,3e-3"],
                      seeds=4)
    result = run_sweep(SweepRequest(plan))               # or backend="ray", settings=BackendSettings(address="auto")
    comparison = compare_groups("lr", by="lr_max")       # better / worse / inconclusive (need ~N seeds)
"""

from expkit.sweep.backends import BACKENDS, BackendSettings, SweepBackend, register_backend
from expkit.sweep.compare import Comparison, MetricComparison, compare_groups
from expkit.sweep.driver import SweepInterrupted, SweepProgress, SweepRequest, SweepResult, TrialOutcome, run_sweep
from expkit.sweep.plan import SweepPlan, Trial, parse_grid, plan_sweep, read_plan

__all__ = [
    "BACKENDS",
    "BackendSettings",
    "Comparison",
    "MetricComparison",
    "SweepBackend",
    "SweepInterrupted",
    "SweepPlan",
    "SweepProgress",
    "SweepRequest",
    "SweepResult",
    "Trial",
    "TrialOutcome",
    "compare_groups",
    "parse_grid",
    "plan_sweep",
    "read_plan",
    "register_backend",
    "run_sweep",
]
