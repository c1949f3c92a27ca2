"""A sweep's plan: the grid of configs times the seeds as numbered trials, how each trial's config reaches
the command, and the plan file (``<store>/groups/<group>.sweep.json``) that ``--resume`` reads back.

A trial's config reaches its command in up to three ways:

- placeholders: ``{lr}`` (any grid key) and ``{seed}`` inside the command's arguments are replaced by the
  trial's value (``python train.py --lr {lr} --seed {seed}``: a plain argparse script needs no glue); a
  command with a placeholder gets no ``--config`` arguments appended (it said where its values go);
- otherwise arguments ``--config KEY=VALUE`` appended to the command (``expkit train charlm`` reads them),
  unless ``config_args=False``;
- always environment variables ``EXPKIT_CONFIG_<KEY>`` (KEY upper-cased, other characters than letters and
  digits as ``_``), for scripts that read their config from the environment.

The seed always goes as ``EXPKIT_SEED`` too (as ``expkit runs exec`` hands it); the trial's run records the
config in ``config.json`` and the trial in ``run.json`` under ``sweep`` (with how the seed was passed).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from expkit.errors import InputError, UsageError
from expkit.runs.store import validate_name, write_json_atomic

__all__ = [
    "PLAN_VERSION",
    "SweepPlan",
    "Trial",
    "check_placeholders",
    "fill_placeholders",
    "parse_grid",
    "placeholders_in",
    "plan_path",
    "plan_sweep",
    "read_plan",
    "write_plan",
]

PLAN_VERSION = 1
_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
# ``{name}`` in an argument; ``{{`` and ``}}`` stay literal braces (as str.format writes them)
_PLACEHOLDER_RE = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_.\-]*)\}")


def _typed(text: str) -> Any:
    """``"0.001"`` -> 0.001, ``"4"`` -> 4, ``"true"`` -> True, anything else stays text (the config record)."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            continue
    return text


@dataclass(frozen=True)
class Trial:
    """One config x seed of a sweep. ``values`` holds the grid's text for each key (passed to the
    command as written); ``config`` the same values typed (recorded)."""

    index: int
    values: tuple[tuple[str, str], ...]
    seed: int

    @property
    def config(self) -> dict[str, Any]:
        return {k: _typed(v) for k, v in self.values}

    @property
    def label(self) -> str:
        """``lr=0.001 seed=3``: how the trial is named in output."""
        return " ".join([*(f"{k}={v}" for k, v in self.values), f"seed={self.seed}"])

    def run_name(self, group: str) -> str:
        """The run's name in the store, stable across retries and resumes: ``<group>-t003``."""
        return f"{group}-t{self.index:03d}"


@dataclass(frozen=True)
class SweepPlan:
    """What a sweep runs: ``command`` for every config of ``grid`` (the product of the keys' values)
    and every seed in ``seeds``, as runs of group ``group``."""

    group: str
    command: tuple[str, ...]
    grid: tuple[tuple[str, tuple[str, ...]], ...]
    seeds: tuple[int, ...]
    config_args: bool = True
    order_seed: int = 0
    start: str = "round-robin"

    @property
    def trials(self) -> tuple[Trial, ...]:
        keys = [k for k, _ in self.grid]
        combos = list(itertools.product(*(vals for _, vals in self.grid))) if self.grid else [()]
        out, i = [], 0
        for combo in combos:
            for seed in self.seeds:
                out.append(Trial(i, tuple(zip(keys, combo, strict=True)), seed))
                i += 1
        return tuple(out)

    def start_order(self) -> tuple[Trial, ...]:
        """The order the trials start in: round-robin by seed (every config's first seed, then every config's
        second ...), the configs in a shuffle drawn from ``order_seed`` (recorded in the plan file); ``start="grid"``:
        the grid's order, a config's seeds in a row. A grid
        written worst-first or best-first starts the same way, and early stopping has one seed of every config
        at a rung before it has a second of any (issue 34 item 5)."""
        if self.start == "grid":  # the grid's own order, a config's seeds in a row (before issue 34)
            return self.trials
        n_seeds = len(self.seeds)
        n_configs = len(self.trials) // n_seeds
        shuffled = np.random.default_rng(self.order_seed).permutation(n_configs)
        return tuple(self.trials[int(c) * n_seeds + k] for k in range(n_seeds) for c in shuffled)

    @property
    def placeholders(self) -> tuple[str, ...]:
        """The grid keys and ``seed`` that the command names as ``{key}``, in order of first use."""
        return placeholders_in(self.command, known=self.placeholder_names)

    @property
    def placeholder_names(self) -> frozenset[str]:
        return frozenset([*(k for k, _ in self.grid), "seed"])

    @property
    def seed_passing(self) -> str:
        """How the seed reaches the command: ``placeholder {seed} and EXPKIT_SEED`` or ``EXPKIT_SEED``."""
        return ("placeholder {seed} and " if "seed" in self.placeholders else "") + "EXPKIT_SEED"

    def command_of(self, trial: Trial) -> list[str]:
        """The argv of one trial: the command with its placeholders filled; then, when it has none and
        ``config_args``, ``--config KEY=VALUE`` per key."""
        if self.placeholders:
            values = {**dict(trial.values), "seed": str(trial.seed)}
            return [fill_placeholders(arg, values) for arg in self.command]
        extra = [a for k, v in trial.values for a in ("--config", f"{k}={v}")] if self.config_args else []
        return [*self.command, *extra]

    @staticmethod
    def env_of(trial: Trial) -> dict[str, str]:
        """``EXPKIT_CONFIG_<KEY>`` per key (``lr`` -> ``EXPKIT_CONFIG_LR``)."""
        return {"EXPKIT_CONFIG_" + re.sub(r"[^A-Za-z0-9]", "_", k).upper(): v for k, v in trial.values}

    def to_json(self) -> dict[str, Any]:
        return {
            "version": PLAN_VERSION,
            "group": self.group,
            "command": list(self.command),
            "grid": [[k, list(v)] for k, v in self.grid],
            "seeds": list(self.seeds),
            "config_args": self.config_args,
            "order_seed": self.order_seed,
            "start": self.start,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any], *, path: Path | None = None) -> SweepPlan:
        try:
            return cls(
                group=str(obj["group"]),
                command=tuple(obj["command"]),
                grid=tuple((str(k), tuple(str(v) for v in vals)) for k, vals in obj["grid"]),
                seeds=tuple(int(s) for s in obj["seeds"]),
                config_args=bool(obj.get("config_args", True)),
                order_seed=int(obj.get("order_seed", 0)),
                start=str(obj.get("start", "grid" if "order_seed" not in obj else "round-robin")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"the sweep plan is incomplete ({type(exc).__name__}: {exc})", path=path) from None


def placeholders_in(command: Sequence[str], *, known: frozenset[str]) -> tuple[str, ...]:
    """The names in ``known`` that appear as ``{name}`` in ``command``'s arguments, in order of first use.

    Example:
        >>> placeholders_in(["t.py", "--lr", "{lr}", "--seed={seed}", "{{x}}"], known=frozenset({"lr", "seed"}))
        ('lr', 'seed')
    """
    found: list[str] = []
    for arg in command:
        for m in _PLACEHOLDER_RE.finditer(arg):
            name = m.group(1)
            if name in known and name not in found:
                found.append(name)
    return tuple(found)


def check_placeholders(command: Sequence[str], *, known: frozenset[str]) -> None:
    """Refuse a ``{name}`` in ``command`` that names no grid key and not ``seed``: it would reach the command
    as written (``--lr {lrr}``: the script parses the text ``{lrr}``). ``{{name}}`` is a literal brace.

    Raises:
        UsageError: naming the placeholder, the argument and the names it could be.
    """
    import difflib

    for arg in command:
        for m in _PLACEHOLDER_RE.finditer(arg):
            name = m.group(1)
            if name is not None and name not in known:
                close = difflib.get_close_matches(name, sorted(known), n=1)
                raise UsageError(
                    f"placeholder {{{name}}} in argument {arg!r} names no grid key"
                    + (f" (did you mean {{{close[0]}}}?)" if close else ""),
                    hint="placeholders: "
                    + ", ".join("{" + k + "}" for k in sorted(known))
                    + "; write {{"
                    + name
                    + "}} for literal braces",
                )


def fill_placeholders(arg: str, values: dict[str, str]) -> str:
    """``arg`` with each ``{name}`` of ``values`` replaced; other ``{...}`` kept as written, ``{{``/``}}``
    as single braces only when the argument has a placeholder (so ``python -c "{{...}}"`` survives).

    Example:
        >>> fill_placeholders("--lr={lr}", {"lr": "0.1"})
        '--lr=0.1'
    """
    if not any(m.group(1) in values for m in _PLACEHOLDER_RE.finditer(arg)):
        return arg

    def one(m: re.Match[str]) -> str:
        if m.group(0) in ("{{", "}}"):
            return m.group(0)[0]
        return values.get(m.group(1), m.group(0))

    return _PLACEHOLDER_RE.sub(one, arg)


def parse_grid(items: Sequence[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``["lr=0.001,0.003", "bs=8"]`` -> ``(("lr", ("0.001", "0.003")), ("bs", ("8",)))``.

    Raises:
        UsageError: an item without ``=``, an empty value, a bad or repeated key (naming the item).
    """
    grid: list[tuple[str, tuple[str, ...]]] = []
    for item in items:
        key, sep, rest = item.partition("=")
        key = key.strip()
        if not sep or not _KEY_RE.match(key):
            raise UsageError(f"grid item {item!r} is not KEY=V1,V2,...", hint="e.g. lr=0.001,0.003")
        values = tuple(v.strip() for v in rest.split(","))
        if not values or any(not v for v in values):
            raise UsageError(f"grid item {item!r} has an empty value", hint="e.g. lr=0.001,0.003")
        if len(set(values)) != len(values):
            raise UsageError(f"grid item {item!r} repeats a value")
        if any(k == key for k, _ in grid):
            raise UsageError(f"grid key {key!r} is given twice", hint="list all its values in one grid item")
        grid.append((key, values))
    return tuple(grid)


MAX_TRIALS = 100_000
"""The most trials one sweep plans: each trial is a process and a run directory."""


def plan_sweep(
    command: Sequence[str],
    *,
    group: str | None = None,
    grid: Sequence[str] = (),
    seeds: int | Sequence[int] = 1,
    config_args: bool = True,
    order_seed: int | None = None,
    start: str = "round-robin",
) -> SweepPlan:
    """The plan for ``command`` over ``grid`` (``KEY=V1,V2`` items) and ``seeds`` (a count: 0..N-1, or a list);
    ``group`` names the sweep (default ``sweep-<UTC time>``); ``order_seed`` draws the shuffle of the configs in
    ``start_order`` (default: a fresh one, recorded in the plan).

    Example:
        >>> p = plan_sweep(["python", "t.py"], group="g", grid=["lr=0.1,0.2"], seeds=2)
        >>> [t.label for t in p.trials]
        ['lr=0.1 seed=0', 'lr=0.1 seed=1', 'lr=0.2 seed=0', 'lr=0.2 seed=1']

    Raises:
        UsageError: no command, a bad group name, seeds < 1 or repeated, a bad grid item, a ``{placeholder}``
            naming no grid key.
    """
    if not command:
        raise UsageError(
            "no command given", hint="the command is the argv each trial runs, e.g. ['python', 'train.py']"
        )
    if group is None:
        group = "sweep-" + datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    validate_name(group, what="sweep name (group)")
    if isinstance(seeds, int) and not 1 <= seeds <= MAX_TRIALS:
        raise UsageError(
            f"seeds {seeds} must be between 1 and {MAX_TRIALS:,}",
            hint="it is the number of seeds per config (0..N-1), not a seed value",
        )
    seed_list = tuple(range(seeds)) if isinstance(seeds, int) else tuple(int(s) for s in seeds)
    if not seed_list:
        raise UsageError("no seeds given", hint="give a seed count of at least 1 or a list of seeds")
    if len(set(seed_list)) != len(seed_list):
        raise UsageError(f"seeds {list(seed_list)} repeat a seed")
    bad = [s for s in seed_list if not 0 <= s < 2**63]
    if bad:
        raise UsageError(f"seed {bad[0]} is outside 0..2**63-1", hint="torch.manual_seed and numpy take seeds there")
    parsed = parse_grid(grid)
    check_placeholders(command, known=frozenset([*(k for k, _ in parsed), "seed"]))
    n_trials = math.prod(len(vals) for _, vals in parsed) * len(seed_list)
    if n_trials > MAX_TRIALS:
        raise UsageError(
            f"the sweep has {n_trials:,} trials (configs x seeds), more than {MAX_TRIALS:,}",
            hint="narrow the grid or the seeds; a sweep that large is a typo more often than a plan",
        )
    if start not in ("round-robin", "grid"):
        raise UsageError(f"start {start!r} must be round-robin or grid")
    if order_seed is None:  # drawn once and written into the plan file: a resume starts trials in the same order
        order_seed = int(np.random.default_rng().integers(2**31))
    return SweepPlan(
        group=group,
        command=tuple(command),
        grid=parsed,
        seeds=seed_list,
        config_args=config_args,
        order_seed=order_seed,
        start=start,
    )


def plan_path(root: Path, group: str) -> Path:
    """Where the plan of ``group`` lives: ``<store>/groups/<group>.sweep.json``."""
    return root / "groups" / f"{validate_name(group, what='sweep name (group)')}.sweep.json"


def write_plan(root: Path, plan: SweepPlan) -> Path:
    path = plan_path(root, plan.group)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, plan.to_json())
    return path


def read_plan(root: Path, group: str) -> SweepPlan:
    """The plan a sweep of ``group`` wrote when it started.

    Raises:
        UsageError: no sweep of that name in this store.
    """
    path = plan_path(root, group)
    if not path.exists():
        raise UsageError(
            f"no sweep {group!r} in {root} (no {path.name})",
            hint="check the store and the group name the sweep started with",
        )
    try:
        obj = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise InputError(f"the sweep plan is not valid JSON ({exc})", path=path) from None
    return SweepPlan.from_json(obj, path=path)
