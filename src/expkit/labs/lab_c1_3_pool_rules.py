"""Lab C1.3: the process-pool rules. The function must live at module top level (a lambda cannot be
sent); globals in workers are copies, so a worker's change never reaches the parent."""

from __future__ import annotations

import time

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Verdict
from expkit.labs.registry import lab

SEED_TOP_LEVEL = SeedFigure("top_level_rule", "the function given to Pool.map must be top level", None, "",
                            "the function passed to Pool.map must live at module top level")
SEED_COPIES = SeedFigure("globals_copied", "globals in workers are copies", None, "",
                         "globals are copies in the children")

SEEN = 0  # mutated by workers; the parent's copy must stay 0


def count_in_worker(_: int) -> int:
    """Bump this process's copy of SEEN and return it."""
    global SEEN
    SEEN += 1
    return SEEN


def _raw_pool_error() -> str:
    """What multiprocessing itself says about a lambda: the error users usually meet."""
    import multiprocessing as mp

    with mp.Pool(1) as pool:
        try:
            pool.map(lambda x: x, [1])
        except Exception as exc:  # noqa: BLE001 - the message is the measurement
            return f"{type(exc).__module__}.{type(exc).__name__}: {exc}"
    return "(no error)"


@lab(id="C1.3", title="Process-pool rules: top-level functions, copied globals", claims=("C1.3",),
     seed=(SEED_TOP_LEVEL, SEED_COPIES))
def run(ctx: LabContext) -> LabOutput:
    from expkit.data import parallel_map
    from expkit.errors import UsageError

    t0 = time.perf_counter()
    ours = "(no error)"
    try:
        parallel_map(lambda x: x + 1, range(4), workers=2)
    except UsageError as exc:
        ours = str(exc)
    reject_s = time.perf_counter() - t0
    raw = _raw_pool_error()

    before = SEEN
    per_item = list(parallel_map(count_in_worker, range(40), workers=2, chunksize=5))
    after = SEEN
    rejected = "module top level" in ours
    copied = before == after == 0 and max(per_item) > 0
    measurements = (
        Measurement("top_level_rule", "a lambda handed to parallel_map", "rejected" if rejected else "accepted", "",
                    Verdict("reproduced") if rejected else Verdict("not reproduced", "no clear error"),
                    SEED_TOP_LEVEL, detail=ours),
        Measurement("reject_us", "time to the error (no worker started)", 1e6 * reject_s, "us"),
        Measurement("raw_error", "multiprocessing's own error for the same lambda", raw.split("\n")[0][:160], ""),
        Measurement("globals_copied", "parent's global after 40 increments in workers", after, "",
                    Verdict("reproduced") if copied else Verdict("not reproduced", f"parent saw {after}"), SEED_COPIES,
                    detail=f"workers' own counts reached {max(per_item)} (each counts in its own copy)"),
    )
    explanation = (
        "A process pool sends the function to each worker by pickling a reference (module + name), and the "
        "worker imports it again. A lambda or a nested function has no importable name, so multiprocessing "
        f"fails with \"{raw.splitlines()[0][:120]}\", raised from deep inside the pool. parallel_map checks before "
        f"any worker starts ({1e6 * reject_s:.0f} us) and says what to do: move the function to module top "
        f"level. Workers then incremented a global 40 times; each saw only its own copy (counts up to "
        f"{max(per_item)}), and the parent's value stayed {after}. DataLoader workers, datasets.map(num_proc=N) "
        "and DDP ranks follow the same rules: state must be passed in and results returned, not shared."
    )
    return LabOutput(measurements=measurements, explanation=explanation)
