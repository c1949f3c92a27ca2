"""Lab C1.3: the process-pool rules. The function must live at module top level (a lambda cannot be
sent); globals in workers are copies, so a worker's change never reaches the parent."""

from __future__ import annotations

import time

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Shown, judged
from expkit.labs.registry import lab

SEED_TOP_LEVEL = SeedFigure(
    "top_level_rule",
    "the function given to Pool.map must be top level",
    None,
    "",
    "the function passed to Pool.map must live at module top level",
)
SEED_COPIES = SeedFigure(
    "globals_copied", "globals in workers are copies", None, "", "globals are copies in the children"
)

SEEN = 0  # mutated by workers; the parent's copy must stay 0


def count_in_worker(_: int) -> int:
    """Bump this process's copy of SEEN and return it."""
    global SEEN
    SEEN += 1
    return SEEN


def add_one(x: int) -> int:
    """A module-level function: what Pool.map can send."""
    return x + 1


def _pool_map_outcome(fn, items: list[int]) -> tuple[bool, str]:  # noqa: ANN001 - any callable
    """Hand ``fn`` to ``multiprocessing.Pool.map`` itself; (ran, the result or the error it raised)."""
    import multiprocessing as mp

    # close() + join(), not the context manager's terminate(): terminate kills workers, and one killed while it
    # holds the task queue's lock leaves the other blocked on it forever (seen once in a full test run)
    pool = mp.Pool(2)
    try:
        return True, repr(pool.map(fn, items))
    except Exception as exc:  # noqa: BLE001 - the error is the measurement
        return False, f"{type(exc).__module__}.{type(exc).__name__}: {exc}".split("\n")[0][:200]
    finally:
        pool.close()
        pool.join()


def _globals_in_pool(n: int) -> tuple[int, int]:
    """Workers of ``multiprocessing.Pool`` bump SEEN ``n`` times; (the parent's SEEN after, the largest count a
    worker saw)."""
    import multiprocessing as mp

    pool = mp.Pool(2)
    try:
        per_item = pool.map(count_in_worker, range(n), chunksize=5)
    finally:
        pool.close()
        pool.join()
    return SEEN, max(per_item)


@lab(
    id="C1.3",
    title="Process-pool rules: top-level functions, copied globals",
    claims=("C1.3",),
    seed=(SEED_TOP_LEVEL, SEED_COPIES),
)
def run(ctx: LabContext) -> LabOutput:
    from expkit.data import parallel_map
    from expkit.errors import UsageError

    def nested(x: int) -> int:
        return x + 1

    # the seed's rule, measured on multiprocessing.Pool.map itself
    top_ran, top_out = _pool_map_outcome(add_one, [1, 2, 3])
    lambda_ran, lambda_out = _pool_map_outcome(lambda x: x + 1, [1, 2, 3])
    nested_ran, nested_out = _pool_map_outcome(nested, [1, 2, 3])
    rule_holds = top_ran and not lambda_ran and not nested_ran

    before = SEEN
    parent_after, worker_max = _globals_in_pool(40)
    copied = before == parent_after == 0 and worker_max > 0

    # expkit's guard for the same mistake: the error before any worker starts (supporting, no verdict)
    t0 = time.perf_counter()
    ours = "(no error)"
    try:
        parallel_map(lambda x: x + 1, range(4), workers=2)
    except UsageError as exc:
        ours = str(exc)
    reject_s = time.perf_counter() - t0

    measurements = (
        judged(
            "top_level_rule",
            "Pool.map: a module-level function runs, a lambda and a nested one are refused",
            rule_holds,
            "",
            rule=Shown("Pool.map refuses a lambda and a nested function and runs a top-level one"),
            seed=SEED_TOP_LEVEL,
            detail=f"top level: {top_out if top_ran else 'failed: ' + top_out}; lambda: "
            f"{'ran' if lambda_ran else lambda_out}; nested: {'ran' if nested_ran else nested_out}",
        ),
        judged(
            "globals_copied",
            "parent's global unchanged after 40 increments in Pool workers",
            copied,
            "",
            rule=Shown("a worker's change to a global never reaches the parent"),
            seed=SEED_COPIES,
            detail=f"parent's SEEN after: {parent_after}; workers' own counts reached {worker_max}",
        ),
        Measurement(
            "expkit_guard",
            "expkit's parallel_map on a lambda",
            "rejected" if "module top level" in ours else "accepted",
            "",
            detail=ours,
        ),
        Measurement("reject_us", "expkit's guard: time to the error (no worker started)", 1e6 * reject_s, "us"),
    )
    top_text = (
        "Pool.map ran the module-level function and refused both: " + lambda_out
        if rule_holds
        else f"the rule did not hold here: top level {'ran' if top_ran else 'failed'}, lambda "
        f"{'ran' if lambda_ran else 'failed'}, nested {'ran' if nested_ran else 'failed'}"
    )
    copy_text = (
        f"each saw only its own copy (counts up to {worker_max}) and the parent's value stayed {parent_after}"
        if copied
        else f"the parent's value became {parent_after}: the workers' globals were not copies"
    )
    explanation = (
        "A process pool sends the function to each worker by pickling a reference (module + name), and the "
        f"worker imports it again; a lambda or a nested function has no importable name. {top_text}. expkit's "
        f"parallel_map checks before any worker starts ({1e6 * reject_s:.0f} us) and says what to do. Pool "
        f"workers then incremented a global 40 times: {copy_text}. DataLoader workers, datasets.map(num_proc=N) "
        "and DDP ranks are process pools too; they are not run here."
    )
    return LabOutput(measurements=measurements, explanation=explanation)
