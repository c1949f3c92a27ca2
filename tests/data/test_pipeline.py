"""Pipeline stages compose lazily; the shuffle buffer is a seeded permutation."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expkit.data import Pipeline, iter_batches, iter_shuffled, iter_take
from expkit.errors import UsageError


def test_chain_filter_map_take_batch():
    out = Pipeline(range(100)).filter(lambda x: x % 3 == 0).map(lambda x: x * 10).take(7).batch(3).collect()
    assert out == [[0, 30, 60], [90, 120, 150], [180]]
    assert list(iter_batches(range(7), 3, drop_last=True)) == [[0, 1, 2], [3, 4, 5]]


def test_take_stops_reading_an_endless_source():
    pulled = []

    def endless():
        for i in itertools.count():
            pulled.append(i)
            yield i

    assert list(iter_take(endless(), 5)) == [0, 1, 2, 3, 4]
    assert len(pulled) == 5


@given(n=st.integers(0, 300), buf=st.integers(1, 64), seed=st.integers(0, 2**32))
@settings(max_examples=60, deadline=None)
def test_shuffle_is_a_seeded_permutation(n, buf, seed):
    a = list(iter_shuffled(range(n), buffer_size=buf, seed=seed))
    assert sorted(a) == list(range(n))
    assert a == list(iter_shuffled(range(n), buffer_size=buf, seed=seed))


def test_shuffle_mixes_within_the_buffer_only_and_seeds_differ():
    a = list(iter_shuffled(range(1000), buffer_size=10, seed=1))
    # an item leaves the buffer at most ~buffer_size positions before it entered... never earlier
    assert all(pos >= x - 10 for pos, x in enumerate(a))
    assert a != list(iter_shuffled(range(1000), buffer_size=10, seed=2))
    assert a != list(range(1000))


@pytest.mark.parametrize(
    "call,msg",
    [
        (lambda: iter_take(range(3), -1), "take n=-1"),
        (lambda: next(iter_batches(range(3), 0)), "batch size=0"),
        (lambda: next(iter_shuffled(range(3), buffer_size=0, seed=0)), "buffer_size=0"),
    ],
)
def test_bad_arguments(call, msg):
    with pytest.raises(UsageError, match=msg):
        call()
