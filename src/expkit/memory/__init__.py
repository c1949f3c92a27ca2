"""Will it fit: parameter counts from config.json, the memory ledger, measured replicas, OOM explanation."""

from __future__ import annotations

from expkit.memory.architecture import ModelSpec, catalog_names, load_model_spec
from expkit.memory.params import ParameterCount, count_parameters

__all__ = [
    "ModelSpec",
    "ParameterCount",
    "catalog_names",
    "count_parameters",
    "load_model_spec",
]
