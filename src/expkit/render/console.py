"""The console: rich on a terminal, plain text in pipes; progress that stays quiet when piped."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Callable

from rich.console import Console

__all__ = ["err_console", "out_console", "progress_steps"]


def out_console() -> Console:
    return Console(file=sys.stdout, highlight=False, soft_wrap=True)


def err_console() -> Console:
    return Console(file=sys.stderr, highlight=False, soft_wrap=True)


@contextmanager
def progress_steps(total: int, description: str) -> Iterator[Callable[[str], None]]:
    """Yield ``advance(label)``. On a terminal: a rich progress bar on stderr. In a pipe: one plain
    line per step (``[2/7] C2.2 ...``) on stderr, so logs still show where a long job is.
    """
    if sys.stderr.isatty():
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=err_console(), transient=False) as bar:
            task = bar.add_task(description, total=total)
            started = [False]

            def advance(label: str) -> None:
                if started[0]:
                    bar.advance(task)
                started[0] = True
                bar.update(task, description=f"{description}: {label}")

            yield advance
            bar.update(task, completed=total, description=f"{description}: done")
    else:
        count = [0]

        def advance(label: str) -> None:
            count[0] += 1
            print(f"[{count[0]}/{total}] {description}: {label}", file=sys.stderr, flush=True)

        yield advance
