"""expkit: the algorithm engineer's toolbox.

Stages live in subpackages (``expkit.stats``, ``expkit.labs`` ...); nothing heavy is imported here,
so ``import expkit`` and ``expkit --help`` stay fast.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
