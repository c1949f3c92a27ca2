"""``parallel_map``: an ordered, streaming map over a process pool (or threads), with the pool's rules
checked up front: the function must be importable from module top level, and workers get copies of
globals, not the parent's (claims C1.2, C1.3)."""

from __future__ import annotations

import os
import pickle
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from itertools import islice
from typing import Any, Literal, TypeVar

from expkit.errors import UsageError

__all__ = ["check_picklable_function", "default_workers", "parallel_map"]

T = TypeVar("T")
R = TypeVar("R")
Backend = Literal["process", "thread"]
_CHUNKS_PER_WORKER_IN_FLIGHT = 2
_DEFAULT_STREAM_CHUNKSIZE = 64


def default_workers() -> int:
    """CPUs this process may run on (affinity mask when the OS has one, else ``os.cpu_count()``)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def _describe(fn: Any) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


def check_picklable_function(fn: Callable[..., Any]) -> None:
    """Raise a clear UsageError when ``fn`` cannot be sent to a worker process.

    Workers receive the function by pickling a *reference* (module + name) and import it again, so a
    lambda or a function defined inside another function cannot be sent; ``functools.partial`` of a
    top-level function can.

    Raises:
        UsageError: a lambda, a nested function, or anything else pickle refuses, naming it.
    """
    target = getattr(fn, "func", fn)  # functools.partial
    qualname = getattr(target, "__qualname__", "")
    hint = (
        "move the function to module top level (def at the left margin of an importable .py file); for extra "
        "arguments use functools.partial(top_level_fn, arg=...)"
    )
    if "<lambda>" in qualname:
        raise UsageError(
            f"parallel_map got a lambda ({_describe(target)}): worker processes cannot receive lambdas "
            "(they are pickled by name, and a lambda has none)",
            hint=hint,
        )
    if "<locals>" in qualname:
        raise UsageError(
            f"parallel_map got a nested function {qualname!r}: worker processes cannot receive functions "
            "defined inside other functions",
            hint=hint,
        )
    try:
        pickle.dumps(fn)
    except (pickle.PicklingError, AttributeError, TypeError) as exc:
        raise UsageError(
            f"parallel_map cannot send {_describe(target)} to worker processes: {exc}", hint=hint
        ) from None


def _run_chunk(fn: Callable[[T], R], start: int, chunk: list[T]) -> list[R]:
    """Runs in the worker: apply ``fn`` to a chunk; a failure carries the index of its item."""
    out = []
    for offset, item in enumerate(chunk):
        try:
            out.append(fn(item))
        except Exception as exc:
            add_note = getattr(exc, "add_note", None)  # Python 3.11+; on 3.10 the exception goes as it is
            if add_note is not None:
                add_note(f"parallel_map: item {start + offset} ({_short_repr(item)}) raised this")
            raise
    return out


def _short_repr(item: Any, limit: int = 80) -> str:
    text = repr(item)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def parallel_map(
    fn: Callable[[T], R],
    items: Iterable[T],
    *,
    workers: int | None = None,
    chunksize: int | None = None,
    backend: Backend = "process",
) -> Iterator[R]:
    """``map(fn, items)`` on a pool: results in input order, input read lazily with a bounded number of
    chunks in flight (2 per worker), so an endless or huge input does not pile up in memory.

    Args:
        fn: a function of one item. For ``process``: defined at module top level (checked before any
            worker starts).
        items: any iterable; read as results are consumed.
        workers: pool size; default ``default_workers()``.
        chunksize: items per task. Default: with ``len(items)``, enough for 4 chunks per worker; else 64.
            Larger chunks amortize the per-task overhead (pickling, queue round trip).
        backend: ``process`` (true parallelism for CPU-bound Python) or ``thread`` (I/O-bound work, or
            code that releases the GIL, e.g. numpy/torch kernels).

    Returns:
        An iterator of results. An exception in ``fn`` is re-raised in the parent with its original type
        and a note naming the index of the failing item; the rest of the pool is cancelled.

    Raises:
        UsageError: a lambda/nested/unpicklable ``fn`` with ``backend="process"``, bad ``workers``,
            ``chunksize`` or ``backend``.

    Example:
        >>> list(parallel_map(abs, [-1, 2, -3], workers=2))   # doctest: +SKIP
        [1, 2, 3]
    """
    if backend not in ("process", "thread"):
        raise UsageError(f"backend={backend!r} is not 'process' or 'thread'")
    n_workers = default_workers() if workers is None else workers
    if n_workers < 1:
        raise UsageError(f"workers={workers} must be >= 1")
    if chunksize is not None and chunksize < 1:
        raise UsageError(f"chunksize={chunksize} must be >= 1")
    if backend == "process":
        check_picklable_function(fn)
    if chunksize is None:
        try:
            n = len(items)  # type: ignore[arg-type]
            chunksize = max(1, -(-n // (n_workers * 4)))
        except TypeError:
            chunksize = _DEFAULT_STREAM_CHUNKSIZE
    return _iter_results(fn, items, n_workers, chunksize, backend)


def _iter_results(
    fn: Callable[[T], R], items: Iterable[T], n_workers: int, chunksize: int, backend: Backend
) -> Iterator[R]:
    pool: Executor = ProcessPoolExecutor(n_workers) if backend == "process" else ThreadPoolExecutor(n_workers)
    it = iter(items)
    in_flight: deque[Future[list[R]]] = deque()
    start = 0

    def submit_next() -> bool:
        nonlocal start
        chunk = list(islice(it, chunksize))
        if not chunk:
            return False
        in_flight.append(pool.submit(_run_chunk, fn, start, chunk))
        start += len(chunk)
        return True

    try:
        more = True
        while more and len(in_flight) < n_workers * _CHUNKS_PER_WORKER_IN_FLIGHT:
            more = submit_next()
        while in_flight:
            results = in_flight.popleft().result()
            if more:
                more = submit_next()
            yield from results
    finally:
        for fut in in_flight:
            fut.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
