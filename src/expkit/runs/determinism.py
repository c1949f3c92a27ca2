"""The determinism probe (C6.5): the same seed twice (bitwise identical?), then other seeds (how far
apart?). The seed-to-seed standard deviation is stored as the noise floor of a run group, so later
differences can be judged against it (``diff``, ``repro``).
"""

from __future__ import annotations

import os
import re
import statistics
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from expkit.errors import InputError, UsageError
from expkit.runs.files import read_regular_bytes
from expkit.runs.store import resolve_store, validate_name, write_json_atomic

__all__ = ["DeterminismReport", "probe_command", "probe_function", "read_noise_floor", "write_noise_floor"]

_REFUSAL = re.compile(r"([\w:.]+) does not have a deterministic implementation")


@dataclass(frozen=True)
class DeterminismReport:
    """Same seed twice, then ``len(seeds)`` distinct seeds.

    ``repeat_identical``: every final metric of the two base-seed runs is bitwise equal.
    ``seed_std``: sample standard deviation (n-1) of each final metric across the distinct seeds, the
    noise floor. ``refusing_ops``: ops that have no deterministic implementation (warned, not fatal).
    """

    base_seed: int
    seeds: tuple[int, ...]
    deterministic: bool
    repeat_identical: bool
    repeat_max_abs_diff: dict[str, float]
    seed_std: dict[str, float]
    seed_range: dict[str, float]
    finals: tuple[dict[str, Any], ...]
    refusing_ops: tuple[str, ...]
    group: str | None = None
    run_ids: tuple[str, ...] = ()


def _numeric(m: dict[str, Any]) -> dict[str, float]:
    return {
        k: float(v)
        for k, v in m.items()
        if k not in ("step", "time") and isinstance(v, (int, float)) and not isinstance(v, bool)
    }


def _summarize(
    base_seed: int,
    seeds: list[int],
    finals: list[dict[str, Any]],
    deterministic: bool,
    refusing: set[str],
    group: str | None,
    run_ids: tuple[str, ...],
) -> DeterminismReport:
    first, second = _numeric(finals[0]), _numeric(finals[1])
    keys = sorted(set(first) & set(second))
    repeat = {k: abs(first[k] - second[k]) for k in keys}
    identical = bool(keys) and all(first[k] == second[k] for k in keys) and set(first) == set(second)
    per_seed = [first] + [_numeric(f) for f in finals[2:]]  # base seed once, then the others
    std, rng = {}, {}
    for k in keys:
        vals = [p[k] for p in per_seed if k in p]
        if len(vals) >= 2:
            std[k] = statistics.stdev(vals)
            rng[k] = max(vals) - min(vals)
    return DeterminismReport(
        base_seed=base_seed,
        seeds=tuple(seeds),
        deterministic=deterministic,
        repeat_identical=identical,
        repeat_max_abs_diff=repeat,
        seed_std=std,
        seed_range=rng,
        finals=tuple(finals),
        refusing_ops=tuple(sorted(refusing)),
        group=group,
        run_ids=run_ids,
    )


MAX_PROBE_SEEDS = 1000
"""The most seeds a probe runs (each is a full run of the command)."""


def _seed_list(base_seed: int, seeds: int) -> list[int]:
    if seeds < 2:
        raise UsageError(f"seeds {seeds} is too few", hint="a spread needs at least 2 distinct seeds")
    if seeds > MAX_PROBE_SEEDS:  # 2**64 seeds was a MemoryError building the list (exit 3)
        raise UsageError(
            f"seeds {seeds} is more than {MAX_PROBE_SEEDS:,}: each seed is one full run of the command",
            hint="a spread is estimated well from 5-20 seeds",
        )
    return [base_seed + i for i in range(seeds)]


def probe_function(
    fn: Callable[[int], dict[str, Any]], *, seeds: int = 5, base_seed: int = 0, deterministic: bool = True
) -> DeterminismReport:
    """Probe an in-process training function ``fn(seed) -> final metrics``.

    ``fn`` is called with ``base_seed`` twice, then with ``seeds - 1`` other seeds, under
    ``torch.use_deterministic_algorithms(True, warn_only=True)`` when ``deterministic`` (restored after).

    Example:
        >>> probe_function(lambda s: {"loss": train(s)}, seeds=5).seed_std  # doctest: +SKIP
        {'loss': 0.0123}
    """
    import torch

    order = _seed_list(base_seed, seeds)
    order = [order[0], *order]
    was = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    refusing: set[str] = set()
    finals = []
    try:
        if deterministic:
            torch.use_deterministic_algorithms(True, warn_only=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for s in order:
                finals.append(dict(fn(s)))
        for w in caught:
            m = _REFUSAL.search(str(w.message))
            if m:
                refusing.add(m.group(1))
    finally:
        torch.use_deterministic_algorithms(was[0], warn_only=was[1])
    return _summarize(base_seed, order, finals, deterministic, refusing, None, ())


def probe_command(
    command: list[str],
    *,
    seeds: int = 5,
    base_seed: int = 0,
    deterministic: bool = True,
    store: str | os.PathLike[str] | None = None,
    group: str | None = None,
    on_output: Callable[[str, bytes], None] | None = None,
    on_run: Callable[[int, int], None] | None = None,
) -> DeterminismReport:
    """Probe a command: ``seeds + 1`` recorded runs (``EXPKIT_SEED`` = base twice, then the others),
    with ``EXPKIT_DETERMINISTIC=warn``. The spread becomes the noise floor of ``group``.

    Raises:
        CheckFailed: a run did not finish (its output names why).
    """
    from expkit.errors import CheckFailed
    from expkit.runs.execute import ExecRequest, execute

    root = resolve_store(store)
    group = group or "determinism-" + datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    validate_name(group, what="group name")
    order = _seed_list(base_seed, seeds)
    order = [order[0], *order]
    finals, ids, refusing = [], [], set()
    for i, s in enumerate(order):
        if on_run:
            on_run(i, len(order))
        request = ExecRequest(
            tuple(command),
            store=root,
            seed=s,
            group=group,
            name=f"{group}-s{s}" + ("-repeat" if i == 1 else ""),
            deterministic="warn" if deterministic else False,
        )
        res = execute(request, on_output=on_output)
        if res.status != "finished":
            raise CheckFailed(
                f"run {res.run_id} (seed {s}) ended {res.status} with exit code {res.exit_code}",
                hint=f"see {res.run_dir}/output.log",
            )
        if not _numeric(res.final_metrics):
            raise CheckFailed(
                f"run {res.run_id} logged no metrics",
                hint='print JSON lines such as {"step": 20, "loss": 1.23} or use run.log()',
            )
        log = Path(res.run_dir) / "output.log"
        refusing.update(_REFUSAL.findall(log.read_text(errors="replace")))
        finals.append(res.final_metrics)
        ids.append(res.run_id)
    report = _summarize(base_seed, order, finals, deterministic, refusing, group, tuple(ids))
    write_noise_floor(root, report)
    return report


def write_noise_floor(root: Path, report: DeterminismReport) -> Path:
    """Store ``report.seed_std`` as the noise floor of ``report.group`` (``groups/<group>.json``)."""
    if report.group is None:
        raise UsageError("the report has no group to store a noise floor for")
    path = root / "groups" / f"{validate_name(report.group, what='group name')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(
        path,
        {
            "group": report.group,
            "noise_floor": report.seed_std,
            "seed_range": report.seed_range,
            "repeat_identical": report.repeat_identical,
            "seeds": report.seeds,
            "repeat_max_abs_diff": report.repeat_max_abs_diff,
            "run_ids": report.run_ids,
            "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        },
    )
    return path


def read_noise_floor(root: Path, group: str) -> dict[str, float] | None:
    """The stored noise floor (metric -> seed-to-seed std) of ``group``, or None when never measured."""
    path = root / "groups" / f"{validate_name(group, what='group name')}.json"
    if not path.exists():
        return None
    try:
        raw = read_regular_bytes(path)
    except OSError as exc:
        raise InputError(f"the group's noise floor cannot be read ({exc.strerror})", path=path) from None
    return orjson.loads(raw).get("noise_floor")
