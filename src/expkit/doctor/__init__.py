"""``expkit doctor``: the field guide's loop checks run on anyone's training code, hooked from outside.

``run_doctor(DoctorRequest(command=...))`` runs a program unchanged with a probe armed at interpreter
start; :func:`watch` arms the same probe inline, and ``DoctorTrainerCallback`` (Hugging Face Trainer) and
``DoctorLightningCallback`` (Lightning) arm it from a callback. The checks live one module each in
:mod:`expkit.doctor.checks`. Names load on first use: the bootstrap imports this package in every
Python process of the watched command, so importing it must cost nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from expkit.doctor.findings import Finding
    from expkit.doctor.inline import Watch, watch
    from expkit.doctor.lightning_callback import DoctorLightningCallback
    from expkit.doctor.runner import DoctorRequest, DoctorResult, run_doctor
    from expkit.doctor.trainer_callback import DoctorTrainerCallback

__all__ = [
    "DoctorLightningCallback",
    "DoctorRequest",
    "DoctorResult",
    "DoctorTrainerCallback",
    "Finding",
    "Watch",
    "run_doctor",
    "watch",
]

_HOME = {
    "Finding": "findings",
    "Watch": "inline",
    "watch": "inline",
    "DoctorRequest": "runner",
    "DoctorResult": "runner",
    "run_doctor": "runner",
    "DoctorTrainerCallback": "trainer_callback",  # imports transformers
    "DoctorLightningCallback": "lightning_callback",  # imports lightning
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'expkit.doctor' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
