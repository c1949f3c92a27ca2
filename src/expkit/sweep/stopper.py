"""``EarlyStopper``: the seed-aware early-stopping rule (``expkit.sweep.early_stop``) applied to a sweep while
it runs. It reads each running trial's ``metrics.jsonl`` with the runs library's reader as the trial logs
it, takes the judged metric's value at each rung the trial reaches, and says which configs the rule stops.

A trial's value at a rung in steps is the metric at its first logged step at or past the rung; at a rung in
seconds, the last value the trial had logged when that many seconds had passed since the driver started it
(looked at every ``POLL_S`` or so: the seconds are the driver's, and a trial that ends sooner has no value
there). The run of a running trial is found by its name in the store's index (the run is created on the
worker, by ``execute``).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from expkit.runs.metrics import iter_metric_records, metric_value
from expkit.runs.store import list_runs
from expkit.sweep.early_stop import EarlyStopPolicy, RungDecision, RungTable
from expkit.sweep.plan import Trial

__all__ = ["EarlyStopper", "config_key", "decision_record", "rung_values"]

LOOKUP_EVERY_S = 1.0  # how often the store's index is asked for the runs of trials not yet found
READ_EVERY_S = 0.5  # how often the running trials' metrics files are read


def config_key(trial: Trial) -> str:
    """The config a trial belongs to, as the rule groups seeds: ``lr=0.1 depth=2`` (``-`` without a grid)."""
    return " ".join(f"{k}={v}" for k, v in trial.values) or "-"


def rung_values(run_dir: Path, policy: EarlyStopPolicy, *, elapsed_s: float | None = None) -> dict[float, float]:
    """The judged metric at each rung the run has reached, from rank 0's ``metrics.jsonl`` (read with
    ``expkit.runs.metrics.iter_metric_records``). Rungs in seconds need ``elapsed_s`` (the trial's age):
    every rung at or below it gets the last value logged so far."""
    out: dict[float, float] = {}
    last: float | None = None
    for path, rec in iter_metric_records(run_dir):
        if path.name != "metrics.jsonl":
            continue
        value = metric_value(rec.get(policy.metric))
        if value is None:
            continue
        last = float(value)
        step = rec.get("step")
        if policy.unit == "steps" and type(step) is int:
            for r in policy.rungs:
                if r not in out and step >= r:
                    out[r] = last
            if len(out) == len(policy.rungs):  # every rung has its value: the rest of the file is not parsed
                break
    if policy.unit == "seconds" and elapsed_s is not None and last is not None:
        out = {r: last for r in policy.rungs if elapsed_s >= r}
    return out


def decision_record(decision: RungDecision, policy: EarlyStopPolicy, *, stopped: bool) -> dict[str, Any]:
    """What a run's record keeps (``extra["early_stop"]``) of the rule's decision on its config."""
    return {
        "config_stopped": stopped,
        "policy": asdict(policy),
        **{k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(decision).items()},
    }


@dataclass
class _Watched:
    trial: Trial
    started: float
    run_dir: Path | None = None
    rungs_seen: set[float] = field(default_factory=set)


class EarlyStopper:
    """The rule's state during one sweep: the trials watched, the rung table and the configs stopped."""

    def __init__(self, policy: EarlyStopPolicy, root: Path, group: str) -> None:
        self.policy, self.root, self.group = policy, root, group
        self.table = RungTable(policy)
        self.watched: dict[int, _Watched] = {}
        self.decisions: dict[int, list[RungDecision]] = {}  # trial index -> the decisions its values led to
        self._looked_up = self._read = -math.inf

    @property
    def stopped(self) -> dict[str, RungDecision]:
        """Config -> the decision that stopped it."""
        return self.table.stopped

    def start(self, trial: Trial) -> None:
        self.watched[trial.index] = _Watched(trial, time.monotonic())

    def add_finished(self, trial: Trial, run_dir: Path) -> None:
        """A trial that finished in an earlier sweep of the group (a resume): its values at the rungs in
        steps go into the table (a rung in seconds cannot be read back afterwards)."""
        if self.policy.unit == "steps":
            self._take(_Watched(trial, 0.0, run_dir), rung_values(run_dir, self.policy))
            self._finish(trial, run_dir)

    def end(self, trial: Trial, run_dir: str | None, *, finished: bool = False) -> list[str]:
        """The trial's attempt ended: read what it logged once more (it may have passed rungs between two
        reads) and stop watching it; a ``finished`` one's final value tells the rule how much its config gains
        after each rung (``RungTable.finish``). Returns the configs this stopped."""
        w = self.watched.pop(trial.index, None)
        if w is None:
            return []
        if run_dir is not None:
            w.run_dir = Path(run_dir)
        if w.run_dir is None:
            return []
        newly = []
        if not self._past_rungs(w):
            newly = self._take(w, rung_values(w.run_dir, self.policy, elapsed_s=time.monotonic() - w.started))
        if finished and config_key(trial) not in self.stopped:
            newly += self._finish(trial, w.run_dir)
        return newly

    def _finish(self, trial: Trial, run_dir: Path) -> list[str]:
        """The last value of the judged metric the run logged goes to the table as the seed's final."""
        last = None
        for path, rec in iter_metric_records(run_dir):
            value = metric_value(rec.get(self.policy.metric)) if path.name == "metrics.jsonl" else None
            if value is not None:
                last = float(value)
        return [] if last is None else self.table.finish(config_key(trial), trial.seed, last)

    def run_dir_of(self, trial: Trial) -> Path | None:
        w = self.watched.get(trial.index)
        return w.run_dir if w else None

    def poll(self) -> list[str]:
        """Read the running trials' metrics (at most every READ_EVERY_S); the configs stopped by it."""
        now = time.monotonic()
        if now - self._read < READ_EVERY_S or not self.watched:
            return []
        self._read = now
        self._find_runs(now)
        newly: list[str] = []
        for w in list(self.watched.values()):
            # a trial past its last rung has nothing left to judge: its file (which keeps growing) is not re-read
            if w.run_dir is not None and config_key(w.trial) not in self.stopped and not self._past_rungs(w):
                newly += self._take(w, rung_values(w.run_dir, self.policy, elapsed_s=now - w.started))
        return newly

    def _past_rungs(self, w: _Watched) -> bool:
        return len(w.rungs_seen) == len(self.policy.rungs)

    def _find_runs(self, now: float) -> None:
        missing = {w.trial.run_name(self.group): w for w in self.watched.values() if w.run_dir is None}
        if not missing or now - self._looked_up < LOOKUP_EVERY_S:
            return
        self._looked_up = now
        for r in list_runs(self.root, where=[f"group={self.group}", "status=running"]).runs:  # newest first
            w = missing.pop(r.name or "", None)
            if w is not None:
                w.run_dir = self.root / r.id

    def _take(self, w: _Watched, values: dict[float, float]) -> list[str]:
        """Add the trial's new rung values to the table, lowest rung first; the configs newly stopped."""
        key = config_key(w.trial)
        for rung in sorted(set(values) - w.rungs_seen):
            w.rungs_seen.add(rung)
            if key in self.stopped:
                break
            decision = self.table.add(key, w.trial.seed, rung, values[rung])
            self.decisions.setdefault(w.trial.index, []).append(decision)
            if decision.stop:
                return [key]
        return []
