"""The doctor's checks inside a Hugging Face ``Trainer``: ``Trainer(..., callbacks=[DoctorTrainerCallback()])``.

This module imports ``transformers``; :mod:`expkit.doctor` loads it only when the name is asked for.
"""

from __future__ import annotations

from typing import Any

from transformers import TrainerCallback

from expkit.doctor.findings import Finding
from expkit.doctor.inline import Watch, watch

__all__ = ["DoctorTrainerCallback"]


class DoctorTrainerCallback(TrainerCallback):
    """Watch the Trainer's first ``steps`` optimizer steps with every registered check.

    The watch starts at ``on_train_begin`` (the Trainer has built its optimizer and scheduler by then) and ends
    after the watched steps or at ``on_train_end``; ``.findings`` then holds what the checks found, and under
    ``expkit runs exec`` the run directory gets ``doctor.json``.

    Example:
        >>> cb = DoctorTrainerCallback()  # doctest: +SKIP
        >>> Trainer(model=model, args=args, train_dataset=ds, callbacks=[cb]).train()  # doctest: +SKIP
        >>> [f.check for f in cb.findings]  # doctest: +SKIP
        ['labels_not_shifted']
    """

    def __init__(self, steps: int = 2) -> None:
        self.steps = steps
        self.watch: Watch | None = None
        self.findings: tuple[Finding, ...] = ()

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.watch = watch(
            kwargs.get("model"),
            kwargs.get("optimizer"),
            steps=self.steps,
            scheduler=kwargs.get("lr_scheduler"),
            source="HF Trainer callback",
        )

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.watch is not None and self.watch.done:
            self._close()

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._close()

    def _close(self) -> None:
        if self.watch is not None:
            self.findings = self.watch.close()
            self.watch = None
