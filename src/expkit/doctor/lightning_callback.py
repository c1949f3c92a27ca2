"""The doctor's checks inside a Lightning run: ``L.Trainer(..., callbacks=[DoctorLightningCallback()])``.

This module imports ``lightning``; :mod:`expkit.doctor` loads it only when the name is asked for.
"""

from __future__ import annotations

from typing import Any

from lightning.pytorch import Callback

from expkit.doctor.findings import Finding
from expkit.doctor.inline import Watch, watch

__all__ = ["DoctorLightningCallback"]


class DoctorLightningCallback(Callback):
    """Watch the first ``steps`` optimizer steps of ``trainer.fit`` with every registered check.

    The watch starts at ``on_train_start`` (optimizers and schedulers are configured by then) and ends after
    the watched steps or at ``on_train_end``; ``.findings`` then holds what the checks found, and under
    ``expkit runs exec`` the run directory gets ``doctor.json``.

    Example:
        >>> cb = DoctorLightningCallback()  # doctest: +SKIP
        >>> L.Trainer(max_steps=10, callbacks=[cb]).fit(module, loader)  # doctest: +SKIP
        >>> [f.check for f in cb.findings]  # doctest: +SKIP
        ['softmax_before_cross_entropy']
    """

    def __init__(self, steps: int = 2) -> None:
        self.steps = steps
        self.watch: Watch | None = None
        self.findings: tuple[Finding, ...] = ()

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        optimizers = list(trainer.optimizers or [])
        schedulers = [c.scheduler for c in (trainer.lr_scheduler_configs or [])]
        self.watch = watch(
            pl_module,
            optimizers[0] if optimizers else None,
            steps=self.steps,
            scheduler=schedulers[0] if schedulers else None,
            source="Lightning callback",
        )

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        if self.watch is not None and self.watch.done:
            self._close()

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self._close()

    def _close(self) -> None:
        if self.watch is not None:
            self.findings = self.watch.close()
            self.watch = None
