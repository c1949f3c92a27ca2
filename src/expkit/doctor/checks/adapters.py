"""Adapters loaded for inference inside a training run (issue 32): a peft model whose active adapter is in
inference mode (``PeftModel.from_pretrained``'s default ``is_trainable=False``, or ``inference_mode=True`` in its
config) has every adapter weight frozen; run forward in training mode with grad enabled, it trains whatever
else the optimizer holds and leaves the adapter as it was loaded. And an entry of a peft config's
``target_modules`` list that names no module of the model (a name from another architecture): peft raises only
when no entry matches, so the modules the entry meant get no adapter."""

from __future__ import annotations

import copy
import re
import sys
from typing import TYPE_CHECKING, Any

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import argument_made_at, assigned_at, string_literals, user_frame

if TYPE_CHECKING:
    from expkit.doctor.probe import ForwardEvent, Probe


def active_adapter_config(module: Any) -> Any:
    """The config of a peft model's active adapter, or None for any other module (peft is never imported)."""
    configs = getattr(module, "peft_config", None)
    if not isinstance(configs, dict) or not configs:
        return None
    active = getattr(module, "active_adapter", None)
    if isinstance(active, (list, tuple)):
        active = active[0] if active else None
    return configs.get(active) if active in configs else next(iter(configs.values()))


def first_training_forward(ev: ForwardEvent, done: set[int]) -> list[tuple[Any, Any]]:
    """The peft models of a model at its first training forward (train mode, grad enabled) that ``done`` has not
    seen (see :meth:`ForwardEvent.first_training`), each with its active adapter config: the model itself, or the
    outermost peft models inside it (a ``PeftModel`` encoder under the user's own classifier). Empty for any
    other forward or model."""
    if not ev.first_training(done):
        return []
    found: list[tuple[Any, Any]] = []
    inside: list[str] = []
    for name, module in ev.module.named_modules():
        if any(name == p or name.startswith(p + ".") for p in inside):
            continue  # the tuner under a PeftModel holds the same config
        config = active_adapter_config(module)
        if config is not None:
            inside.append(name)
            if module.training:  # a frozen peft teacher kept in eval() inside the trained model is not trained
                found.append((module, config))
            if not name:
                break  # the model itself: everything is inside it
    return found


@register
class AdapterInInferenceMode(Check):
    """A peft model whose active adapter is in inference mode (all adapter weights frozen) runs a training
    forward (train mode, grad enabled): the adapter the run means to train never changes."""

    name = "adapter_in_inference_mode"

    def __init__(self) -> None:
        self.done: set[int] = set()

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        for model, config in first_training_forward(ev, self.done):
            if getattr(config, "inference_mode", False):
                self._report(probe, model, config)
                return

    def _report(self, probe: Probe, model: Any, config: Any) -> None:
        frozen = sum(p.numel() for p in model.parameters() if not p.requires_grad)
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        file, line = probe.built_at(model)
        probe.report(
            kind="bug",
            check=self.name,
            message=f"a {type(model).__name__} whose adapter is in inference mode (every adapter weight "
            "frozen) runs a training forward: the adapter never trains",
            evidence={
                "peft_type": str(getattr(config, "peft_type", "")),
                "frozen_values": frozen,
                "trainable_values": trainable,
            },
            fix="PeftModel.from_pretrained(model, path, is_trainable=True) to resume training an adapter "
            "(inference_mode=False in a config you build)",
            where=(file, line) if file else None,
        )


def unmatched_targets(model: Any, config: Any) -> list[str]:
    """The entries of ``config.target_modules`` (a list or set of names, not a regex) that match no module name of
    ``model`` by peft's own rule (``check_target_module_exists``: the name, or a suffix after a dot)."""
    targets = getattr(config, "target_modules", None)
    if isinstance(targets, str):
        return _unmatched_alternatives(model, targets)
    if not targets:
        return []
    try:
        from peft.tuners.tuners_utils import check_target_module_exists
    except ImportError:
        return []

    def matched(one: Any, name: str) -> bool:
        found = check_target_module_exists(one, name)
        return found is not None and found is not False and type(found).__name__ != "_ExcludedModule"

    names = [n for n, _ in model.named_modules() if n]
    missing = []
    for target in sorted(str(t) for t in targets):
        one = copy.copy(config)
        one.target_modules = {target}
        if not any(matched(one, n) for n in names):
            missing.append(target)
    return missing


def _listed(targets: Any) -> Any:
    return targets if isinstance(targets, str) else sorted(str(t) for t in targets)


def _unmatched_alternatives(model: Any, pattern: str) -> list[str]:
    """For a regex ``target_modules`` (peft full-matches it against each module name) with one group of plain
    alternatives (``.*\\.(q|v|ffn_up)$``): the alternatives that, put in the group's place alone, match no module."""
    group = re.search(r"\(([^()]*\|[^()]*)\)", pattern)
    if group is None or pattern == "all-linear":
        return []
    names = [n for n, _ in model.named_modules() if n]
    missing = []
    for alt in group.group(1).split("|"):
        one = pattern[: group.start()] + "(?:" + alt + ")" + pattern[group.end() :]
        try:
            if alt and not any(re.fullmatch(one, n) for n in names):
                missing.append(alt)
        except re.error:
            return []
    return missing


@register
class AdapterTargetMatchesNothing(Check):
    """A peft model trained (a training forward with grad) whose active config lists a ``target_modules`` entry
    that matches no module of the model by peft's own matching rule: peft raises only when no entry matches at all,
    so a misspelt name or one from another architecture (``mlp.fc_in`` on GPT-2, whose MLP is ``mlp.c_fc``) leaves
    the modules it meant without an adapter. Names the line where the entry is written, else the model's
    construction."""

    name = "adapter_target_matches_nothing"

    def __init__(self) -> None:
        self.done: set[int] = set()

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        for model, config in first_training_forward(ev, self.done):
            missing = unmatched_targets(model, config)
            if missing:
                self._report(probe, model, config, missing)
                return

    def _report(self, probe: Probe, model: Any, config: Any, missing: list[str]) -> None:
        file, line = probe.built_at(model)
        wanted = {missing[0], config.target_modules} if isinstance(config.target_modules, str) else {missing[0]}
        written = next((n for n, value in string_literals(file) if value in wanted), None)
        probe.report(
            kind="bug",
            check=self.name,
            message=f"the adapter's target_modules entry {missing[0]!r} names no module of the model "
            f"({len(missing)} entr(y/ies) match nothing): peft adapts the modules the "
            "other entries match and ignores this one, so the layers it meant are not tuned",
            evidence={"unmatched": missing, "target_modules": _listed(config.target_modules)},
            fix="use the model's own module names (print([n for n, _ in model.named_modules()]), e.g. GPT-2's "
            "mlp.c_fc), or target_modules='all-linear'",
            where=(file, written or line) if file else None,
        )


def _task_heads(model: Any) -> list[tuple[str, Any]]:
    """The classification head of a Hugging Face task model (each linear layer whose outputs are the
    ``config.num_labels`` logits of a sequence or token classifier, a copy peft trains included), named; none for
    any other model (a language model's head predicts the vocabulary and is pretrained)."""
    config = getattr(model, "config", None)
    labels, vocab = getattr(config, "num_labels", None), getattr(config, "vocab_size", None)
    if not isinstance(labels, int) or not type(model).__name__.endswith(_TASK_HEADS):
        return []
    import torch

    return [
        (n, m)
        for n, m in model.named_modules()
        if isinstance(m, torch.nn.Linear) and m.out_features == labels and m.out_features != vocab
    ]


_TASK_HEADS = ("ForSequenceClassification", "ForTokenClassification", "ForMultipleChoice", "ForQuestionAnswering")


@register
class AdapterTaskHeadFrozen(Check):
    """A peft model over a classifier (a ``...ForSequenceClassification``) trained with its classification head
    frozen: the head is new (a pretrained body has none for this task), and peft freezes every parameter but the
    adapter's unless the config's ``task_type`` (``SEQ_CLS``) or ``modules_to_save`` names it. The adapter then
    learns against a random projection that never moves. Names the line that made the config."""

    name = "adapter_task_head_frozen"

    def __init__(self) -> None:
        self.done: set[int] = set()

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        for model, config in first_training_forward(ev, self.done):
            get_base = getattr(model, "get_base_model", None)
            base = get_base() if callable(get_base) else None
            heads = _task_heads(base) if base is not None else []
            if heads and not any(p.requires_grad for _, m in heads for p in m.parameters()):
                self._report(probe, model, config, base, heads[-1])
                return

    def _report(self, probe: Probe, model: Any, config: Any, base: Any, head: tuple[str, Any]) -> None:
        # the config where a variable of the user's still holds it, else the get_peft_model call's argument
        file, line = assigned_at(config, sys._getframe(2), outer=True)
        if file is None or line == user_frame()[1]:
            file, line = probe.built_at(model)
            line = (argument_made_at(file, line, "peft_config", position=1) or line) if file is not None else None
        probe.report(
            kind="bug",
            check=self.name,
            message=f"the classification head {head[0]!r} of {type(base).__name__} is frozen under the adapter: "
            "it is newly initialised for this task, and peft trains only the adapter unless the config's "
            "task_type or modules_to_save names the head, so the adapter learns against a random projection",
            evidence={"head": head[0], "task_type": str(getattr(config, "task_type", None))},
            fix="LoraConfig(task_type='SEQ_CLS', ...) (or modules_to_save=['" + head[0].rsplit(".", 1)[-1] + "'])",
            where=(file, line) if file is not None else None,
        )
