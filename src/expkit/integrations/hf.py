"""Hugging Face Trainer -> the run store: ``Trainer(..., callbacks=[ExpkitCallback()])``.

The callback opens a run when training begins (the seven records; the config is the
``TrainingArguments`` and the model's config, non-string keys kept as strings with a note), logs
every ``on_log`` dict at the trainer's ``global_step`` (strings such as ``'2.31'`` read as numbers, NaN
kept: a NaN loss marks the run diverged), records each saved ``checkpoint-N/`` directory, and closes
the record when training ends but keeps the run open until the process exits, so a later
``trainer.evaluate()`` lands in it at its step; an ``evaluate()`` before ``train()`` opens the run and lands
at step 0. Under ``torchrun`` rank 0 owns the record and each other rank writes
``metrics.rank<R>.jsonl`` beside it. Under ``expkit runs exec`` it attaches to the exec's run.

transformers 5 has no way for a package to add a ``report_to`` name (``INTEGRATION_TO_CALLBACK`` in
``transformers.integrations.integration_utils`` is a closed dict checked by ``TrainingArguments``), so
pass the callback yourself and keep ``report_to="none"`` (or any other tracker beside it).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from expkit.errors import MissingDependency

__all__ = ["ExpkitCallback"]

try:
    from transformers import TrainerCallback
except ImportError:  # pragma: no cover - the class below needs transformers; say so when it is used
    TrainerCallback = None  # type: ignore[assignment,misc]

_SEEDED_BY = "the Hugging Face Trainer (TrainingArguments.seed)"


def _require_transformers() -> None:
    if TrainerCallback is None:
        raise MissingDependency("transformers is not installed", hint="pip install 'expkit[hf]'")


class ExpkitCallback(TrainerCallback if TrainerCallback is not None else object):  # type: ignore[misc]
    """A ``transformers.TrainerCallback`` that records the training run in the expkit run store.

    Args:
        store: the store directory (default ``$EXPKIT_STORE`` or ``./runs``).
        name: the run's name; group: its group.
        data: inputs to fingerprint (paths, directories, ``hf://NAME@REV``).
        config: extra config recorded beside ``training_args`` and ``model_config``.

    Example:
        >>> trainer = Trainer(model=model, args=args, train_dataset=ds,  # doctest: +SKIP
        ...                   callbacks=[ExpkitCallback(name="baseline", data=["train.jsonl"])])
        >>> trainer.train()  # doctest: +SKIP
        >>> ExpkitCallback.run.id  # then: expkit runs show baseline  # doctest: +SKIP
    """

    def __init__(
        self,
        *,
        store: str | os.PathLike[str] | None = None,
        name: str | None = None,
        group: str | None = None,
        data: list[Any] | tuple[Any, ...] = (),
        config: dict[str, Any] | None = None,
    ) -> None:
        _require_transformers()
        self.store, self.name, self.group, self.data = store, name, group, tuple(data)
        self.config = dict(config or {})
        self.run: Any = None

    # --- the run ------------------------------------------------------------------------------
    def _open(self, args: Any, model: Any) -> None:
        from expkit.runs.run import Capture, coerce_config, start

        notes: list[str] = []
        cfg: dict[str, Any] = {**self.config, "training_args": coerce_config(args.to_dict(), "training_args", notes)}
        model_cfg = getattr(model, "config", None)
        if model_cfg is not None and hasattr(model_cfg, "to_dict"):
            cfg["model_config"] = coerce_config(model_cfg.to_dict(), "model_config", notes)
        self.run = start(
            config=cfg,
            data=self.data,
            seed=int(args.seed),
            store=self.store,
            name=self.name,
            group=self.group,
            capture=Capture(seeded_by=_SEEDED_BY),
        )
        self.run.set_integration("hf-trainer")
        if getattr(args, "logging_nan_inf_filter", False):
            notes.append(
                "TrainingArguments.logging_nan_inf_filter is on: the Trainer leaves NaN/inf losses out of "
                "the logged loss (a diverged run can log loss 0.0); grad_norm still shows the divergence"
            )
        if notes:
            self.run.add_config_notes(tuple(notes))

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        if self.run is None:
            self._open(args, model)

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        from expkit.runs.metrics import metric_value

        if not logs:
            return
        if self.run is None:  # trainer.evaluate() before train(): the run opens here, the metrics land at step 0
            self._open(args, kwargs.get("model"))
        metrics = {k: v for k, v in ((k, metric_value(v)) for k, v in logs.items()) if v is not None}
        if metrics:
            self.run.log(int(state.global_step), **metrics)

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        from expkit.runs.runrecord import CheckpointEntry

        if self.run is None:
            return
        step = int(state.global_step)
        ckpt = Path(args.output_dir) / f"checkpoint-{step}"  # transformers' PREFIX_CHECKPOINT_DIR
        files = tuple(sorted(p.name for p in ckpt.iterdir())) if ckpt.is_dir() else ()
        self.run.note_checkpoint(CheckpointEntry(name=ckpt.name, files=files, step=step, path=str(ckpt.resolve())))

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.run is not None:
            self.run.settle("finished")  # stays open: a later trainer.evaluate() lands in this run
