"""``expkit runs diff A B``: the seven records side by side, and every difference ranked by how likely
it explains the change in the final metrics.

The ranking follows the order of what usually moves a metric (config values, package versions of the
numerics stack, commit and patch, data, seed, hardware). When both runs belong to a group whose noise
floor was measured (``expkit runs determinism``) and every metric moved less than it, the seed is
ranked first: seed-to-seed noise alone explains the change.
"""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from expkit.runs.files import is_regular_file, read_regular_bytes
from expkit.runs.metrics import metric_value
from expkit.runs.records import RecordPresence, describe_records
from expkit.runs.runrecord import RunRecord
from expkit.runs.store import find_run_dir, read_record, resolve_store

__all__ = ["Difference", "MetricDelta", "RunDiff", "diff_runs"]

# Packages whose version changes numerics directly (kernels, BLAS, tokenization, training loops).
NUMERICS_PACKAGES = (
    "torch",
    "numpy",
    "scipy",
    "triton",
    "transformers",
    "tokenizers",
    "accelerate",
    "peft",
    "trl",
    "datasets",
    "flash-attn",
    "xformers",
    "deepspeed",
    "jax",
    "jaxlib",
    "safetensors",
)
# Score per kind of difference; larger = more likely to explain a metric change (ranking only).
_SCORES = {
    "config": 100,
    "command": 95,
    "package:numerics": 90,
    "code:commit": 80,
    "code:patch": 78,
    "data": 70,
    "seed": 60,
    "determinism": 55,
    "env_var": 52,
    "python": 50,
    "package": 40,
    "hardware": 30,
}


@dataclass(frozen=True)
class Difference:
    """One differing value: ``category`` (config, package, code, data, seed, ...), ``key``, both values."""

    category: str
    key: str
    a: Any
    b: Any
    score: int
    why: str


@dataclass(frozen=True)
class MetricDelta:
    name: str
    a: float | None
    b: float | None
    delta: float | None
    noise_floor: float | None


@dataclass(frozen=True)
class RunDiff:
    """Both runs' seven records (one line each), the metric deltas, the ranked differences."""

    a: str
    b: str
    records_a: tuple[RecordPresence, ...]
    records_b: tuple[RecordPresence, ...]
    metrics: tuple[MetricDelta, ...]
    differences: tuple[Difference, ...]
    within_noise_floor: bool | None
    note: str


def _flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out if obj else {prefix: {}}
    return {prefix: obj}


def _patch_digest(run_dir: Path) -> str | None:
    p = run_dir / "code.patch"
    return hashlib.sha256(read_regular_bytes(p)).hexdigest()[:12] if is_regular_file(p) else None


def _compare_maps(category: str, a: dict[str, Any], b: dict[str, Any], score_of: Any, why: str) -> list[Difference]:
    out = []
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key), b.get(key)
        if va != vb:
            out.append(Difference(category, key, va, vb, score_of(key), why))
    return out


def _command_differences(ra: RunRecord, rb: RunRecord) -> list[Difference]:
    """The argv positions that differ, when either run is a ``runs exec`` (its arguments are config)."""
    if ra.kind != "exec" and rb.kind != "exec":
        return []
    argv_a, argv_b = ra.command, rb.command
    out = []
    for i in range(max(len(argv_a), len(argv_b))):
        va = argv_a[i] if i < len(argv_a) else None
        vb = argv_b[i] if i < len(argv_b) else None
        if va != vb:
            why = "command-line arguments are config too"
            out.append(Difference("command", f"argv[{i}]", va, vb, _SCORES["command"], why))
    return out


def _environment_differences(ra: RunRecord, rb: RunRecord) -> list[Difference]:
    """Packages, runtime versions, determinism flags and numerics environment variables."""
    ea, eb = ra.environment, rb.environment
    diffs = _compare_maps(
        "package",
        ea.packages if ea else {},
        eb.packages if eb else {},
        lambda k: (
            _SCORES["package:numerics"] if k in NUMERICS_PACKAGES or k.startswith("nvidia-") else _SCORES["package"]
        ),
        "a package version changes kernels or defaults",
    )
    for key in ("python", "cuda", "cudnn"):
        va, vb = getattr(ea, key, None), getattr(eb, key, None)
        if va != vb:
            score = _SCORES["python" if key == "python" else "package:numerics"]
            diffs.append(Difference("environment", key, va, vb, score, "runtime version"))
    fl_a, fl_b = getattr(ea, "determinism", None), getattr(eb, "determinism", None)
    if (fl_a is None) != (fl_b is None):
        side = "A" if fl_a is None else "B"
        diffs.append(
            Difference(
                "determinism",
                "flags",
                "not captured" if fl_a is None else "captured",
                "not captured" if fl_b is None else "captured",
                20,
                f"torch was not imported when run {side} started, so its flags were not read",
            )
        )
    else:
        diffs += _compare_maps(
            "determinism",
            fl_a or {},
            fl_b or {},
            lambda k: _SCORES["determinism"],
            "numerics switch (TF32, deterministic algorithms, threads)",
        )
    diffs += _compare_maps(
        "env_var",
        ea.env_vars if ea else {},
        eb.env_vars if eb else {},
        lambda k: _SCORES["env_var"],
        "environment variable that changes numerics",
    )
    return diffs


def _code_data_hardware_differences(ra: RunRecord, rb: RunRecord, da: Path, db: Path) -> list[Difference]:
    """The commit, the uncommitted patch, the data fingerprints, the hardware and divergence."""
    diffs = []
    ca, cb = getattr(ra.code, "commit", None), getattr(rb.code, "commit", None)
    if ca != cb:
        diffs.append(Difference("code", "commit", ca, cb, _SCORES["code:commit"], "different committed code"))
    pa, pb = _patch_digest(da), _patch_digest(db)
    if pa != pb:
        why = "uncommitted changes differ"
        diffs.append(Difference("code", "uncommitted patch (sha256)", pa, pb, _SCORES["code:patch"], why))
    fa = {d.source: d.hash or d.revision for d in ra.data}
    fb = {d.source: d.hash or d.revision for d in rb.data}
    diffs += _compare_maps("data", fa, fb, lambda k: _SCORES["data"], "different data content")
    hw_keys = ("cpu_model", "cpu_cores_logical", "ram_bytes", "gpu_names", "gpu_driver")
    diffs += _compare_maps(
        "hardware",
        {k: getattr(ra.hardware, k, None) for k in hw_keys},
        {k: getattr(rb.hardware, k, None) for k in hw_keys},
        lambda k: _SCORES["hardware"],
        "other hardware runs other kernels",
    )
    if ra.diverged != rb.diverged:
        why = "one run's loss or gradient norm went NaN/inf"
        diffs.append(Difference("metrics", "diverged", ra.diverged_at or False, rb.diverged_at or False, 150, why))
    return diffs


def _metric_deltas(ra: RunRecord, rb: RunRecord, floor: dict[str, float]) -> tuple[MetricDelta, ...]:
    """B - A for every final metric (step and time left out), with the group's noise floor where stored."""
    ma, mb = ra.final_metrics, rb.final_metrics
    metrics = []
    for k in sorted(set(ma) | set(mb)):
        if k in ("step", "time"):
            continue
        fa_v, fb_v = metric_value(ma.get(k)), metric_value(mb.get(k))
        delta = fb_v - fa_v if fa_v is not None and fb_v is not None else None
        metrics.append(MetricDelta(k, fa_v, fb_v, delta, floor.get(k)))
    return tuple(metrics)


def _within_noise_floor(metrics: tuple[MetricDelta, ...]) -> bool | None:
    """Whether every metric with a noise floor moved less than it; None when no metric has one."""
    judged = [m for m in metrics if m.delta is not None and m.noise_floor is not None and math.isfinite(m.delta)]
    return all(abs(m.delta or 0.0) <= (m.noise_floor or 0.0) for m in judged) if judged else None


def _seed_difference(ra: RunRecord, rb: RunRecord, within: bool | None) -> list[Difference]:
    """The seed, ranked first when every metric moved within the noise floor (the change may be seed noise)."""
    sa, sb = getattr(ra.seed, "seed", None), getattr(rb.seed, "seed", None)
    if sa == sb:
        return []
    if within:
        why = "every metric moved less than the group's seed-to-seed noise floor"
        return [Difference("seed", "seed", sa, sb, 200, why)]
    return [Difference("seed", "seed", sa, sb, _SCORES["seed"], "another seed moves the result (C6.5)")]


def diff_runs(a: str, b: str, *, store: str | os.PathLike[str] | None = None) -> RunDiff:
    """Compare two stored runs.

    Args:
        a, b: run IDs (or names, or unique ID prefixes).
        store: the store (default ``$EXPKIT_STORE`` or ``./runs``).

    Returns:
        A RunDiff, differences sorted by score (most likely explanation first).

    Example:
        >>> diff_runs("lr-a", "lr-b").differences[0].key  # doctest: +SKIP
        'lr'
    """
    from expkit.runs.determinism import read_noise_floor

    root = resolve_store(store)
    da, db = find_run_dir(root, a), find_run_dir(root, b)
    ra, rb = read_record(da), read_record(db)
    floor = (read_noise_floor(root, ra.group) or {}) if ra.group and ra.group == rb.group else {}
    metrics = _metric_deltas(ra, rb, floor)
    within = _within_noise_floor(metrics)
    config_why = "a config value changes what is trained"
    diffs = _compare_maps("config", _flatten(ra.config), _flatten(rb.config), lambda k: _SCORES["config"], config_why)
    diffs += _command_differences(ra, rb)
    diffs += _environment_differences(ra, rb)
    diffs += _code_data_hardware_differences(ra, rb, da, db)
    diffs += _seed_difference(ra, rb, within)
    diffs.sort(key=lambda d: -d.score)
    if within is None:
        note = "no noise floor recorded for these runs (measure one with the determinism probe)"
    elif within:
        note = "all metric changes are within the noise floor: they may be seed noise"
    else:
        note = "some metric changes exceed the noise floor: look at the top differences"
    return RunDiff(
        a=ra.id,
        b=rb.id,
        records_a=describe_records(ra, da),
        records_b=describe_records(rb, db),
        metrics=metrics,
        differences=tuple(diffs),
        within_noise_floor=within,
        note=note,
    )
