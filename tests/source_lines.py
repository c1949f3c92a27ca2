"""Where a marked line of a test's own source is: the doctor tests assert that a finding names the line of the
bug they wrote (``# the loss``), so they look it up instead of counting lines."""

from __future__ import annotations

import inspect
from typing import Any


def line_of(marker: str, fn: Any) -> int:
    """The line of ``fn``'s file holding ``marker`` inside ``fn``'s source (the first such line)."""
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, text in enumerate(lines) if marker in text)
