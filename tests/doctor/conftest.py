"""The doctor's tests run hundreds of watches in one long pytest process. Some checks look for live objects
through the garbage collector (the running Trainer, the program's tokenizer, tensors that still hold an old
graph), which is cheap in a program's own process and costs a scan of every earlier test's leftovers here. Each
test therefore starts with the objects already alive frozen (``gc.freeze``: out of the collector's lists, so out
of ``gc.get_objects``), which leaves the test's own objects where the checks look, as in a doctored program's
process, and thaws them after the test."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _earlier_tests_objects_frozen() -> Iterator[None]:
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
