"""parallel_map: order, streaming, errors with the item index, and the process-pool rules (C1.3)."""

from __future__ import annotations

import functools
import itertools

import pytest

from expkit.data import parallel_map
from expkit.errors import UsageError

COUNTER = 0


def square(x: int) -> int:
    return x * x


def bump_counter(_: int) -> int:
    global COUNTER
    COUNTER += 1
    return COUNTER


def fail_on_17(x: int) -> int:
    if x == 17:
        raise ValueError(f"bad item {x}")
    return x


def add(x: int, *, k: int) -> int:
    return x + k


@pytest.mark.parametrize("backend", ["process", "thread"])
def test_results_in_order(backend):
    got = parallel_map(square, range(100), workers=2, chunksize=7, backend=backend)
    assert list(got) == [x * x for x in range(100)]


def test_partial_of_a_top_level_function_is_fine():
    assert list(parallel_map(functools.partial(add, k=5), [1, 2], workers=2)) == [6, 7]


def test_streaming_input_is_read_lazily_with_bounded_items_in_flight():
    pulled = []

    def source():
        for i in itertools.count():
            pulled.append(i)
            yield i

    it = parallel_map(square, source(), workers=2, chunksize=4)
    assert [next(it) for _ in range(3)] == [0, 1, 4]
    it.close()
    # 2 workers x 2 chunks x 4 items in flight, plus one chunk refilled: never the endless source
    assert len(pulled) <= 2 * 2 * 4 + 4


def test_exception_keeps_its_type_and_names_the_item_index():
    with pytest.raises(ValueError, match="bad item 17") as info:
        list(parallel_map(fail_on_17, range(40), workers=2, chunksize=5))
    assert "parallel_map: item 17 (17) raised this" in info.value.__notes__


def test_lambda_and_nested_function_are_refused_before_any_worker_starts():
    with pytest.raises(UsageError, match=r"got a lambda.*move the function to module top level"):
        parallel_map(lambda x: x, [1])

    def nested(x):
        return x

    with pytest.raises(UsageError, match=r"nested function '.*<locals>.nested'.*module top level"):
        parallel_map(nested, [1])
    # threads share the interpreter: no pickling, so a lambda is fine
    assert list(parallel_map(lambda x: -x, [1, 2], backend="thread", workers=2)) == [-1, -2]


def test_globals_are_copies_in_workers():
    got = list(parallel_map(bump_counter, range(20), workers=2, chunksize=5))
    assert max(got) >= 5  # each worker counted in its own copy
    assert COUNTER == 0  # the parent's global never moved


@pytest.mark.parametrize(
    "kwargs,msg",
    [({"workers": 0}, "workers=0"), ({"chunksize": 0}, "chunksize=0"), ({"backend": "gpu"}, "backend='gpu'")],
)
def test_bad_arguments(kwargs, msg):
    with pytest.raises(UsageError, match=msg):
        parallel_map(square, [1], **kwargs)
