"""Adapters loaded for inference inside a training run (issue 32): a peft model whose active adapter is in
inference mode (``PeftModel.from_pretrained``'s default ``is_trainable=False``, or ``inference_mode=True`` in its
config) has every adapter weight frozen; run forward in training mode with grad enabled, it trains whatever
else the optimizer holds and leaves the adapter as it was loaded."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from expkit.doctor.checks import Check, register

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


@register
class AdapterInInferenceMode(Check):
    """A peft model whose active adapter is in inference mode (all adapter weights frozen) runs a training
    forward (train mode, grad enabled): the adapter the run means to train never changes."""

    name = "adapter_in_inference_mode"

    def __init__(self) -> None:
        self.done: set[int] = set()

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        if not (ev.training and ev.grad_enabled) or id(ev.module) in self.done:
            return
        config = active_adapter_config(ev.module)
        if config is None or not getattr(config, "inference_mode", False):
            return
        self.done.add(id(ev.module))
        frozen = sum(p.numel() for p in ev.module.parameters() if not p.requires_grad)
        trainable = sum(p.numel() for p in ev.module.parameters() if p.requires_grad)
        file, line = probe.built_at(ev.module)
        probe.report(
            kind="bug",
            check=self.name,
            message=f"a {type(ev.module).__name__} whose adapter is in inference mode (every adapter weight "
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
