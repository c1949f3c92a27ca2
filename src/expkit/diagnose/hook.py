"""``install()``: an excepthook that prints Python's traceback and then the ``expkit why`` report."""

from __future__ import annotations

import sys
import traceback
from types import TracebackType

__all__ = ["install", "uninstall"]

_previous: list[object] = []


def _hook(etype: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
    from expkit.diagnose.explanations import explain
    from expkit.diagnose.report import format_report
    from expkit.diagnose.tracebacks import parse_traceback

    text = "".join(traceback.format_exception(etype, value, tb))
    sys.stderr.write(text)
    if issubclass(etype, KeyboardInterrupt):
        return
    try:
        parsed = parse_traceback(text)
        report = format_report(parsed, explain(parsed))
    except Exception as exc:  # noqa: BLE001 - the hook must never hide the original error
        report = f"(expkit why could not read this traceback: {exc!r})"
    sys.stderr.write("\n--- expkit why ---\n" + report + "\n")


def install() -> None:
    """Replace ``sys.excepthook`` so an uncaught exception prints its traceback, then our report.

    Example:
        >>> import expkit.diagnose
        >>> expkit.diagnose.install()   # at the top of train.py
    """
    if sys.excepthook is not _hook:
        _previous.append(sys.excepthook)
        sys.excepthook = _hook


def uninstall() -> None:
    """Put back the excepthook that was there before ``install``."""
    if sys.excepthook is _hook and _previous:
        sys.excepthook = _previous.pop()  # type: ignore[assignment]
