"""The public surfaces of expkit.data and expkit.diagnose: everything in __all__ exists, nothing private leaks."""

from __future__ import annotations

import pytest

import expkit.data
import expkit.diagnose


@pytest.mark.parametrize("module", [expkit.data, expkit.diagnose])
def test_all_names_exist_and_are_public(module):
    assert module.__all__ == sorted(module.__all__)
    for name in module.__all__:
        assert not name.startswith("_") and getattr(module, name) is not None
