"""Labs: each seed claim as an experiment measured on this machine (one ``lab_*.py`` module per claim group)."""

from expkit.labs.base import Lab, LabContext, LabOutput, LabResult, Measurement, SeedFigure, Verdict
from expkit.labs.registry import all_labs, lab, select_labs

__all__ = [
    "Lab",
    "LabContext",
    "LabOutput",
    "LabResult",
    "Measurement",
    "SeedFigure",
    "Verdict",
    "all_labs",
    "lab",
    "select_labs",
]
