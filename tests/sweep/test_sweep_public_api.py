"""The public surface of expkit.sweep: everything in __all__ exists, is public, and is sorted; importing the
package starts no Ray and imports no torch (the CLI's --help stays fast)."""

from __future__ import annotations

import subprocess
import sys

import expkit.sweep


def test_all_names_exist_and_are_public():
    assert expkit.sweep.__all__ == sorted(expkit.sweep.__all__)
    for name in expkit.sweep.__all__:
        assert not name.startswith("_") and getattr(expkit.sweep, name) is not None


def test_importing_sweep_loads_neither_ray_nor_torch():
    code = "import sys, expkit.sweep; print(sorted(m for m in ('ray', 'torch') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
