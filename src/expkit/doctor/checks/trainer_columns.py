"""A column the Hugging Face Trainer dropped that the program's own ``compute_loss`` asks for: with
``remove_unused_columns=True`` (the default) the Trainer removes every dataset column that is not an argument of
the model's ``forward``, so a per-example weight (or any extra field) read in an overridden ``compute_loss`` with
``inputs.get(...)``/``inputs.pop(..., default)`` is never there and the fallback trains silently
(transformers#25054). Measured, not read from the source: from the first watched step, the batches handed to
``compute_loss`` record which missing keys it asked for. The same column meant for the model itself under another
name (a ``weight`` column for ``forward(..., sample_weight=None)``) is the other way in: a dropped column whose name
shares a word with an optional ``forward`` argument that no watched forward received."""

from __future__ import annotations

import contextlib
import gc
import inspect
import re
import sys
from typing import TYPE_CHECKING, Any

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import keyword_line, string_literals, user_frame

if TYPE_CHECKING:
    from expkit.doctor.probe import ForwardEvent, Probe, StepEvent


def hf_trainer_class() -> Any:
    """``transformers.Trainer`` when the program loaded it, else None (``transformers.Trainer`` would import
    ``transformers.trainer``, a second of pandas and datasets, into a program that has no Trainer)."""
    trainer_type = getattr(sys.modules.get("transformers.trainer"), "Trainer", None)
    return trainer_type if isinstance(trainer_type, type) else None


def hf_trainer() -> Any:
    """The program's Hugging Face Trainer (a subclass instance included), or None: searched through the garbage
    collector, only when the Trainer class is loaded (:func:`hf_trainer_class`) and only in the watched steps."""
    trainer_type = hf_trainer_class()
    if trainer_type is None:
        return None
    # type(obj), not isinstance: isinstance reads __class__, which some objects answer with a warning
    return next((obj for obj in gc.get_objects() if issubclass(type(obj), trainer_type)), None)


def dropped_columns(trainer: Any) -> set[str]:
    """The training set's columns the Trainer removes (``remove_unused_columns``): not an argument of the model's
    forward, nor a label column."""
    data, args = getattr(trainer, "train_dataset", None), getattr(trainer, "args", None)
    columns = getattr(data, "column_names", None)
    if columns is None and data is not None and hasattr(data, "__getitem__"):
        # a torch Dataset of dicts: the Trainer's collator drops the same keys from each sample
        with contextlib.suppress(Exception):
            first = data[0]
            columns = list(first) if isinstance(first, dict) else None
    if not isinstance(columns, list) or not getattr(args, "remove_unused_columns", False):
        return set()
    try:
        trainer._set_signature_columns_if_needed()
    except Exception:  # noqa: BLE001 - another transformers: nothing judged
        return set()
    kept = set(getattr(trainer, "_signature_columns", None) or ()) | set(getattr(args, "label_names", None) or ())
    return set(columns) - kept if kept else set()


class _AskedBatch(dict[str, Any]):
    """A batch that notes the keys asked for and missing (get, pop, [], in)."""

    def __init__(self, data: Any, asked: dict[str, tuple[str | None, int | None]]) -> None:
        super().__init__(data)
        self._asked = asked

    def _note(self, key: Any) -> None:
        if isinstance(key, str) and key not in self and key not in self._asked:
            self._asked[key] = user_frame(3)

    def get(self, key: Any, default: Any = None) -> Any:
        self._note(key)
        return super().get(key, default)

    def pop(self, key: Any, *default: Any) -> Any:
        self._note(key)
        return super().pop(key, *default)

    def __getitem__(self, key: Any) -> Any:
        self._note(key)
        return super().__getitem__(key)

    def __contains__(self, key: Any) -> bool:
        found = super().__contains__(key)
        if not found and isinstance(key, str) and key not in self._asked:
            self._asked[key] = user_frame(2)
        return found


# words every tokenizer output or model argument shares: a match on them says nothing (special_tokens_mask, which
# DataCollatorForLanguageModeling recomputes when it is gone, is not meant for token_type_ids)
_GENERIC_WORDS = {
    "ids",
    "id",
    "mask",
    "input",
    "inputs",
    "type",
    "values",
    "states",
    "output",
    "outputs",
    "token",
    "tokens",
}


def _words(name: str) -> set[str]:
    """The words of an identifier (``sample_weight`` -> {sample, weight}), without the generic ones every model
    argument shares (``ids``, ``mask``)."""
    words = {w for w in re.split(r"[_\W]+", name.lower()) if w} - _GENERIC_WORDS
    return {w[:-1] if len(w) > 3 and w.endswith("s") else w for w in words}  # weights, weight: one word


@register
class TrainerDroppedAskedColumn(Check):
    """Under a Hugging Face Trainer whose subclass overrides ``compute_loss``: a training-set column that the
    Trainer removed (``remove_unused_columns``: not a ``forward`` argument) is asked for by that ``compute_loss``
    (a key looked up and missing in the batch it receives). The loss then runs its fallback (no weights, no extra
    field) without an error. Names the ``remove_unused_columns=`` argument when the program writes it, else the
    lookup in ``compute_loss``."""

    name = "trainer_dropped_asked_column"

    def __init__(self) -> None:
        self.trainer: Any = None
        self.dropped: set[str] = set()
        self.asked: dict[str, tuple[str | None, int | None]] = {}
        self.given: dict[int, set[str]] = {}  # id(top-level module) -> the forward arguments it received
        self.done = False

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        # the arguments each forward received matter only under a Hugging Face Trainer (transformers imported)
        if not self.done and ev.training and ev.grad_enabled and "transformers" in sys.modules:
            given = self.given.setdefault(id(ev.module), set())
            given.update(ev.kwargs)
            with contextlib.suppress(TypeError, ValueError):
                given.update(inspect.signature(ev.module.forward).bind_partial(*ev.inputs).arguments)

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        if self.done:
            return
        if self.trainer is None:
            self._instrument(probe)
            return
        if self._forward_argument_starved(probe):
            return
        missing = sorted(set(self.asked) & self.dropped)
        if not missing:
            return
        self.done = True
        code = getattr(type(self.trainer).compute_loss, "__code__", None)
        file = code.co_filename if code is not None else None
        line = keyword_line(file, ("remove_unused_columns",))
        where = (file, line) if line is not None else self.asked[missing[0]]
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{type(self.trainer).__name__}.compute_loss asks for the column {missing[0]!r}, which the "
            "Trainer removed from every batch (remove_unused_columns: it is not an argument of the model's "
            "forward): the loss never sees it and runs its fallback",
            evidence={"asked_and_dropped": missing, "dropped_columns": sorted(self.dropped)},
            fix="TrainingArguments(remove_unused_columns=False) (then drop the raw text columns yourself), or "
            "carry the field through a data collator",
            where=where if where[0] is not None else None,
        )

    def _forward_argument_starved(self, probe: Probe) -> bool:
        """A dropped column whose name shares a word with an optional argument of the model's ``forward`` that no
        watched training forward received: the column was meant for it. Names the string that names the column in
        the training script (the last one above the ``train()`` call), else the ``remove_unused_columns=``
        argument."""
        model = getattr(self.trainer, "model", None)
        given = self.given.get(id(model)) if model is not None else None
        if model is None or not given:
            return False
        try:
            params = inspect.signature(model.forward).parameters
        except (TypeError, ValueError):
            return False
        idle = [n for n, p in params.items() if p.default is None and n not in given]
        pairs = [(c, n) for c in sorted(self.dropped) for n in idle if _words(c) & _words(n)]
        if not pairs:
            return self._read_from_kwargs(probe, model, params)
        self.done = True
        column, argument = pairs[0]
        file, at = user_frame(2)  # the training script's train() call
        named = [ln for ln, value in string_literals(file) if value == column]
        line = max((ln for ln in named if at is None or ln <= at), default=named[0] if named else None)
        line = line if line is not None else keyword_line(file, ("remove_unused_columns",))
        probe.report(
            kind="bug",
            check=self.name,
            message=f"the Trainer removed the training column {column!r} (remove_unused_columns: it is not an "
            f"argument of {type(model).__name__}.forward), and forward's optional argument {argument!r} was "
            "never given: the column meant for it never arrives and the model runs its fallback",
            evidence={"dropped_column": column, "argument_never_given": argument, "dropped": sorted(self.dropped)},
            fix=f"name the column as forward's argument ({argument!r}), or carry it through a data collator",
            where=(file, line) if file is not None and line is not None else None,
        )
        return True

    def _read_from_kwargs(self, probe: Probe, model: Any, params: Any) -> bool:
        """A ``forward(..., **kwargs)`` that reads a dropped column by name (``kwargs.get("attention_mask")``): the
        Trainer keeps only columns named in the signature, so the key is never there and forward runs its fallback
        (transformers#7548). Names forward's ``def`` line, where the column must be named."""
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            return False
        fn = inspect.unwrap(type(model).forward)
        try:
            file, first = inspect.getsourcefile(fn), inspect.getsourcelines(fn)[1]
        except (OSError, TypeError):
            return False
        last = first + len(inspect.getsourcelines(fn)[0]) - 1
        read = sorted(v for ln, v in string_literals(file) if first <= ln <= last and v in self.dropped)
        if not read:
            return False
        self.done = True
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{type(model).__name__}.forward reads the column {read[0]!r} from **kwargs, but the Trainer "
            "removed it from every batch (remove_unused_columns keeps only the columns named in forward's "
            "signature): forward never receives it and runs its fallback",
            evidence={"read_from_kwargs": read, "dropped": sorted(self.dropped)},
            fix=f"name {read[0]!r} as an argument of forward, or TrainingArguments(remove_unused_columns=False)",
            where=(file, first) if file is not None else None,
        )
        return True

    def _instrument(self, probe: Probe) -> None:
        """At the first step: find the Trainer and the columns it drops; when it overrides compute_loss, hand
        its compute_loss batches that note the keys asked for."""
        trainer, base = hf_trainer(), hf_trainer_class()
        if trainer is None or base is None:
            self.done = True
            return
        self.trainer, self.dropped = trainer, dropped_columns(trainer)
        if not self.dropped:
            self.done = True
            return
        if type(trainer).compute_loss is base.compute_loss:
            return  # only the forward's side is judged
        asked = self.asked

        def make(original: Any) -> Any:
            def compute_loss(model: Any, inputs: Any, *args: Any, **kwargs: Any) -> Any:
                if isinstance(inputs, dict) and not isinstance(inputs, _AskedBatch):
                    inputs = _AskedBatch(inputs, asked)
                return original(model, inputs, *args, **kwargs)

            return compute_loss

        probe.patch(trainer, "compute_loss", make)
