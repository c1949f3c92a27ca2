"""Time bounds that hold on a loaded machine (issue 36: the suite failed at load 10). A test that must catch
a hang or a regression of minutes never compares with a fixed number of seconds: it times a reference
command in the same process, just before, and allows a generous multiple of it plus a floor. At idle and at
load 10 alike the bound stays far below the defect it guards against (248 s of retries, a search that
never returned)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``fn()`` and the seconds it took."""
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def assert_within(seconds: float, reference_s: float, *, factor: float = 20.0, floor_s: float = 10.0) -> None:
    """``seconds`` at most ``factor`` times the reference measured in this process, plus ``floor_s``."""
    bound = factor * reference_s + floor_s
    assert seconds <= bound, (
        f"{seconds:.1f} s, over {bound:.1f} s ({factor:g} x the reference {reference_s:.2f} s + {floor_s:g} s)"
    )
