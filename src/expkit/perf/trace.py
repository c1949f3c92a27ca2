"""Chrome trace files as torch.profiler (Kineto) writes them: loading, validation, self times, intervals.

A trace is JSON: an object with ``traceEvents`` (and optional ``distributedInfo``, ``deviceProperties``)
or a bare list of events. Only complete events (``"ph": "X"``, ``ts`` and ``dur`` in microseconds) matter.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from expkit.data.nesting import json_nesting_depth
from expkit.data.sources import read_whole_bytes
from expkit.errors import InputError

__all__ = [
    "Trace",
    "TraceEvent",
    "intersect_intervals",
    "load_trace",
    "parse_trace",
    "self_times",
    "subtract_intervals",
    "total_length",
    "union_intervals",
]

HOST_OP_CATS = frozenset({"cpu_op", "operator"})
RUNTIME_CATS = frozenset({"cuda_runtime", "cuda_driver", "runtime", "xpu_runtime"})
DEVICE_CATS = frozenset({"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"})
ANNOTATION_CATS = frozenset({"user_annotation", "gpu_user_annotation"})

Interval = tuple[float, float]


@dataclass(frozen=True)
class TraceEvent:
    """One complete event; ``ts_us`` and ``dur_us`` in microseconds, ``cat`` lower-cased."""

    name: str
    cat: str
    ts_us: float
    dur_us: float
    pid: str
    tid: str

    @property
    def end_us(self) -> float:
        return self.ts_us + self.dur_us


@dataclass(frozen=True)
class Trace:
    """A parsed trace: its events by kind, the ProfilerStep windows, and ``distributedInfo`` if any."""

    source: str
    host_ops: tuple[TraceEvent, ...]
    runtime_calls: tuple[TraceEvent, ...]
    device_events: tuple[TraceEvent, ...]
    steps: tuple[TraceEvent, ...]
    rank: int | None
    world_size: int | None

    @property
    def has_device(self) -> bool:
        return bool(self.device_events)

    def window(self) -> tuple[Interval, ...]:
        """The ProfilerStep intervals when present, else one span from first to last op or kernel."""
        if self.steps:
            return tuple(union_intervals((s.ts_us, s.end_us) for s in self.steps))
        evs = self.host_ops + self.device_events
        return ((min(e.ts_us for e in evs), max(e.end_us for e in evs)),)


def parse_trace(data: object, *, source: str = "<trace>") -> Trace:
    """Build a Trace from decoded JSON (a dict with ``traceEvents`` or a list of events).

    Raises:
        InputError: no ``traceEvents`` list, no complete op/kernel event in it, or an event with a negative
            or non-finite duration or start (an edited or corrupt trace: every share would be wrong).
    """
    if isinstance(data, dict):
        events = data.get("traceEvents")
        dist = data.get("distributedInfo") or {}
    else:
        events, dist = data, {}
    if not isinstance(events, list):
        raise InputError(
            "has no 'traceEvents' list: not a Chrome trace from torch.profiler",
            path=source,
            hint="export one with prof.export_chrome_trace(path)",
        )
    host, runtime, device, steps = [], [], [], []
    # a negative or non-finite duration or start: kineto guards against negative ones since 2022
    # (pytorch/kineto#646, from a zero end time stamp); every share computed with one would be wrong
    invalid: list[TraceEvent] = []
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X" or "dur" not in e or "ts" not in e:
            continue
        try:
            ev = TraceEvent(
                name=str(e.get("name", "")),
                cat=str(e.get("cat", "")).lower(),
                ts_us=float(e["ts"]),
                dur_us=float(e["dur"]),
                pid=str(e.get("pid", "")),
                tid=str(e.get("tid", "")),
            )
        except (TypeError, ValueError):
            continue
        if not (math.isfinite(ev.ts_us) and math.isfinite(ev.dur_us) and ev.dur_us >= 0):
            invalid.append(ev)
            continue
        if ev.cat in HOST_OP_CATS:
            host.append(ev)
        elif ev.cat in RUNTIME_CATS:
            runtime.append(ev)
        elif ev.cat in DEVICE_CATS:
            device.append(ev)
        elif ev.cat == "user_annotation" and ev.cat in ANNOTATION_CATS and ev.name.startswith("ProfilerStep#"):
            steps.append(ev)
    if invalid:
        first = invalid[0]
        raise InputError(
            f"invalid trace: {len(invalid):,} event(s) with a negative or non-finite duration or start (first: "
            f"{first.name[:80]!r}, ts {first.ts_us:g} us, dur {first.dur_us:g} us); no time shares are given",
            path=source,
            hint="pass the file written by prof.export_chrome_trace(path), unedited",
        )
    if not host and not device:
        raise InputError(
            f"has no profiler events ({len(events)} entries, none an op or a kernel)",
            path=source,
            hint="profile at least one step: torch.profiler.profile(...) around the work",
        )
    rank = dist.get("rank") if isinstance(dist, dict) else None
    world = dist.get("world_size") if isinstance(dist, dict) else None
    key = lambda e: (e.ts_us, -e.dur_us)  # noqa: E731 - parents before their children
    return Trace(
        source=source,
        host_ops=tuple(sorted(host, key=key)),
        runtime_calls=tuple(sorted(runtime, key=key)),
        device_events=tuple(sorted(device, key=key)),
        steps=tuple(sorted(steps, key=key)),
        rank=_count_or_none(rank),
        world_size=_count_or_none(world),
    )


def _count_or_none(value: Any) -> int | None:
    """``distributedInfo``'s rank or world size as an int; None when absent or not a whole number (a field
    another tool wrote differently is not worth refusing the whole trace for)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def load_trace(path: str | Path) -> Trace:
    """Read a Chrome trace file (``.json``; ``.json.gz`` too).

    Raises:
        InputError: missing file, not UTF-8, a truncated .gz, not JSON (with the line), nested too deeply,
            or no events.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("no such trace file", path=p)
    try:
        raw = read_whole_bytes(p, kind="trace file", hint="pass the file written by prof.export_chrome_trace(path)")
        text = raw.decode("utf-8-sig")  # -sig: a byte-order mark is not an error; .gz inflated, bounded
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"not JSON ({exc.msg})",
            path=p,
            line=exc.lineno,
            column=exc.colno,
            hint="pass the file written by prof.export_chrome_trace(path)",
        ) from exc
    except RecursionError:
        raise InputError(
            f"JSON nested {json_nesting_depth(text):,} levels deep: too deeply to be a Chrome trace",
            path=p,
            hint="pass the file written by prof.export_chrome_trace(path)",
        ) from None
    except (UnicodeDecodeError, OSError, EOFError) as exc:  # EOFError: a truncated .gz
        raise InputError(f"cannot be read as a text trace: {exc}", path=p) from exc
    return parse_trace(data, source=str(p))


def self_times(events: Sequence[TraceEvent], within: Sequence[Interval]) -> list[tuple[TraceEvent, float]]:
    """Each event's self time in microseconds (its duration minus its direct children's, nesting taken
    per thread), for events that start inside ``within``. ``events`` must be sorted by (ts, -dur)."""
    out: list[tuple[TraceEvent, float]] = []
    by_thread: dict[tuple[str, str], list[TraceEvent]] = {}
    for e in events:
        by_thread.setdefault((e.pid, e.tid), []).append(e)
    for evs in by_thread.values():
        stack: list[list] = []  # [event, self_us]
        for e in evs:
            while stack and stack[-1][0].end_us <= e.ts_us:
                out.append((stack[-1][0], stack[-1][1]))
                stack.pop()
            if stack:
                stack[-1][1] -= min(e.dur_us, stack[-1][0].end_us - e.ts_us)
            stack.append([e, e.dur_us])
        out.extend((ev, s) for ev, s in stack)
    return [(e, max(s, 0.0)) for e, s in out if _inside(e.ts_us, within)]


def _inside(t: float, within: Sequence[Interval]) -> bool:
    return any(a <= t < b for a, b in within)


def union_intervals(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, disjoint union."""
    merged: list[list[float]] = []
    for a, b in sorted(intervals):
        if b <= a:
            continue
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return [(a, b) for a, b in merged]


def intersect_intervals(xs: Sequence[Interval], ys: Sequence[Interval]) -> list[Interval]:
    """Intersection of two sorted disjoint interval lists."""
    out, i, j = [], 0, 0
    while i < len(xs) and j < len(ys):
        a, b = max(xs[i][0], ys[j][0]), min(xs[i][1], ys[j][1])
        if a < b:
            out.append((a, b))
        if xs[i][1] < ys[j][1]:
            i += 1
        else:
            j += 1
    return out


def subtract_intervals(xs: Sequence[Interval], ys: Sequence[Interval]) -> list[Interval]:
    """``xs`` minus ``ys`` (both sorted and disjoint)."""
    out: list[Interval] = []
    j = 0
    for a, b in xs:
        cur = a
        while j < len(ys) and ys[j][1] <= cur:
            j += 1
        k = j
        while k < len(ys) and ys[k][0] < b:
            if ys[k][0] > cur:
                out.append((cur, ys[k][0]))
            cur = max(cur, ys[k][1])
            k += 1
        if cur < b:
            out.append((cur, b))
    return out


def total_length(intervals: Iterable[Interval]) -> float:
    return sum(b - a for a, b in intervals)
