"""Pipeline stages as generators that compose: filter, map, take, batch, and a seeded shuffle buffer.

Each stage holds at most its own buffer (``batch``: one batch, ``shuffle``: ``buffer_size`` items), so a
chain over ``iter_jsonl`` keeps memory flat however large the file (claim C1.1).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

from expkit.errors import UsageError

__all__ = ["Pipeline", "iter_batches", "iter_filter", "iter_map", "iter_shuffled", "iter_take"]

T = TypeVar("T")
U = TypeVar("U")


def iter_filter(items: Iterable[T], keep: Callable[[T], bool]) -> Iterator[T]:
    """Items for which ``keep(item)`` is true."""
    return (x for x in items if keep(x))


def iter_map(items: Iterable[T], fn: Callable[[T], U]) -> Iterator[U]:
    """``fn(item)`` for each item, lazily."""
    return (fn(x) for x in items)


def iter_take(items: Iterable[T], n: int) -> Iterator[T]:
    """The first ``n`` items; stops reading the source after them.

    Raises:
        UsageError: a negative ``n``.
    """
    if n < 0:
        raise UsageError(f"take n={n} is negative")
    return itertools.islice(items, n)


def iter_batches(items: Iterable[T], size: int, *, drop_last: bool = False) -> Iterator[list[T]]:
    """Lists of ``size`` items; the last one shorter unless ``drop_last``.

    Raises:
        UsageError: ``size`` < 1.
    """
    if size < 1:
        raise UsageError(f"batch size={size} must be >= 1")
    it = iter(items)
    while batch := list(itertools.islice(it, size)):
        if len(batch) < size and drop_last:
            return
        yield batch


def iter_shuffled(items: Iterable[T], *, buffer_size: int, seed: int) -> Iterator[T]:
    """Approximate shuffle with a buffer of ``buffer_size`` items (the ``datasets``/tf.data shuffle
    buffer): fill the buffer, then for each new item emit a random buffered one and put the new one in
    its place; drain the buffer in random order at the end. Same seed, same order.

    With ``buffer_size`` >= the number of items this is a uniform shuffle.

    Raises:
        UsageError: ``buffer_size`` < 1.
    """
    if buffer_size < 1:
        raise UsageError(f"shuffle buffer_size={buffer_size} must be >= 1")
    rng = random.Random(seed)
    buf: list[T] = []
    for x in items:
        if len(buf) < buffer_size:
            buf.append(x)
            continue
        i = rng.randrange(buffer_size)
        yield buf[i]
        buf[i] = x
    rng.shuffle(buf)
    yield from buf


class Pipeline(Generic[T]):
    """A fluent wrapper: ``Pipeline(iter_jsonl(p)).filter(f).map(g).shuffle(1000, seed=0).batch(8)``.

    Iterating it runs the chain lazily; each method returns a new Pipeline over the previous one.
    """

    def __init__(self, source: Iterable[T]) -> None:
        self._source = source

    def __iter__(self) -> Iterator[T]:
        return iter(self._source)

    def filter(self, keep: Callable[[T], bool]) -> Pipeline[T]:
        return Pipeline(iter_filter(self._source, keep))

    def map(self, fn: Callable[[T], U]) -> Pipeline[U]:
        return Pipeline(iter_map(self._source, fn))

    def take(self, n: int) -> Pipeline[T]:
        return Pipeline(iter_take(self._source, n))

    def shuffle(self, buffer_size: int, *, seed: int) -> Pipeline[T]:
        return Pipeline(iter_shuffled(self._source, buffer_size=buffer_size, seed=seed))

    def batch(self, size: int, *, drop_last: bool = False) -> Pipeline[list[T]]:
        return Pipeline(iter_batches(self._source, size, drop_last=drop_last))

    def collect(self) -> list[Any]:
        """Run the chain into a list (only when the result is small)."""
        return list(self._source)
