"""Lightning -> the run store: ``Trainer(logger=ExpkitLogger())``.

A ``lightning.pytorch.loggers.Logger``: the run opens on first use (the seven records), the
hyperparameters (``save_hyperparameters()``) become the config (non-string keys kept as strings with a
note), every ``log_metrics`` call is logged at its step (NaN kept: a NaN loss marks the run diverged),
each checkpoint the ``ModelCheckpoint`` callback saves is recorded, and ``finalize`` settles the record
(``finished``, or ``failed`` when Lightning reports a failure) and keeps the run open until exit, so
``test_loss`` after ``fit`` lands in it. Unlike Lightning's own loggers it logs
on every rank: under ``torchrun`` rank 0 owns the record and rank R writes ``metrics.rank<R>.jsonl``.
Under ``expkit runs exec`` it attaches to the exec's run.
"""

from __future__ import annotations

import os
from argparse import Namespace
from pathlib import Path
from typing import Any

from expkit.errors import MissingDependency

__all__ = ["ExpkitLogger"]

try:
    from lightning.pytorch.loggers import Logger
except ImportError:  # pragma: no cover - the class below needs lightning; say so when it is used
    Logger = None  # type: ignore[assignment,misc]

_SEEDED_BY = "Lightning (seed_everything in the script)"


class ExpkitLogger(Logger if Logger is not None else object):  # type: ignore[misc]
    """Record a Lightning run in the expkit run store.

    Args:
        store: the store directory (default ``$EXPKIT_STORE`` or ``./runs``).
        name: the run's name; group: its group.
        data: inputs to fingerprint (paths, directories, ``hf://NAME@REV``).
        seed: the seed the script gave ``lightning.seed_everything`` (recorded; Lightning seeds).

    Example:
        >>> trainer = lightning.Trainer(max_epochs=3, logger=ExpkitLogger(name="baseline"))  # doctest: +SKIP
        >>> trainer.fit(model, loader)  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        store: str | os.PathLike[str] | None = None,
        name: str | None = None,
        group: str | None = None,
        data: list[Any] | tuple[Any, ...] = (),
        seed: int | None = None,
    ) -> None:
        if Logger is None:
            raise MissingDependency("lightning is not installed", hint="pip install 'expkit[lightning]'")
        super().__init__()
        self._store, self._name, self._group, self._data, self._seed = store, name, group, tuple(data), seed
        self._run: Any = None
        self._seen_ckpts: set[str] = set()

    @property
    def experiment(self) -> Any:
        """The ``expkit.runs.Run`` (opened on first use)."""
        if self._run is None:
            from expkit.runs.run import Capture, start

            seed = self._seed
            if seed is None and os.environ.get("PL_GLOBAL_SEED", "").isdigit():
                seed = int(os.environ["PL_GLOBAL_SEED"])  # what lightning.seed_everything set
            self._run = start(
                config={},
                data=self._data,
                seed=seed,
                store=self._store,
                name=self._name,
                group=self._group,
                capture=Capture(seeded_by=_SEEDED_BY),
            )
            self._run.set_integration("lightning")
        return self._run

    @property
    def name(self) -> str:
        return "expkit"

    @property
    def version(self) -> str:
        return self.experiment.id

    @property
    def save_dir(self) -> str:
        return str(self.experiment.dir)

    @property
    def root_dir(self) -> str:
        return str(self.experiment.store)

    @property
    def log_dir(self) -> str:
        return str(self.experiment.dir)

    def log_hyperparams(self, params: dict[str, Any] | Namespace, *args: Any, **kwargs: Any) -> None:
        from expkit.runs.run import coerce_config

        notes: list[str] = []
        hp = vars(params) if isinstance(params, Namespace) else dict(params)
        self.experiment.update_config(coerce_config(hp, "hparams", notes), source="hparams")
        if notes:
            self.experiment.add_config_notes(tuple(notes))

    def log_metrics(self, metrics: dict[str, Any], step: int | None = None) -> None:
        from expkit.runs.metrics import metric_value

        values = {k: metric_value(v.item() if hasattr(v, "item") else v) for k, v in metrics.items()}
        values = {k: v for k, v in values.items() if v is not None}
        if values:
            self.experiment.log(int(step) if step is not None else 0, **values)

    def after_save_checkpoint(self, checkpoint_callback: Any) -> None:
        from expkit.runs.runrecord import CheckpointEntry

        step = getattr(checkpoint_callback, "_last_global_step_saved", None)  # ModelCheckpoint's own counter
        for path in (checkpoint_callback.last_model_path, checkpoint_callback.best_model_path):
            if not path or path in self._seen_ckpts or not Path(path).is_file():
                continue
            self._seen_ckpts.add(path)
            self.experiment.note_checkpoint(
                CheckpointEntry(
                    name=Path(path).name,
                    files=(Path(path).name,),
                    step=step if type(step) is int else None,
                    path=str(Path(path).resolve()),
                )
            )

    def save(self) -> None:
        """Metrics are flushed by the run's writer thread every 0.5 s; nothing to do here."""

    def finalize(self, status: str) -> None:
        """Lightning calls this at the end of ``fit`` and again after ``test``/``validate``: a success settles
        the record and keeps the run open (``test_loss`` after ``fit`` lands in it); the run closes at exit."""
        if self._run is None:
            return
        if status == "success":
            self._run.settle("finished")
        else:
            self._run.finish("failed", error=f"Lightning finished with status {status!r}")
