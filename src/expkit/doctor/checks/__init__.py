"""The loop checks: one module each, registered with ``@register``; :func:`all_checks` finds them all.

A check is a small class that listens to the events the :class:`~expkit.doctor.probe.Probe` sees in the
watched steps (a top-level forward, a loss call, a backward, an optimizer step before and after, a
``.item()``, a watched call such as gradient clipping) and reports
:class:`~expkit.doctor.findings.Finding` objects through ``probe.report``.
Adding a check is adding a module here with one decorated class (docs/doctor.md, "add a check").
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from expkit.doctor.probe import BackwardEvent, CallEvent, ForwardEvent, LossEvent, Probe, StepEvent

__all__ = ["Check", "CheckInfo", "all_checks", "describe_checks", "register"]

_REGISTRY: dict[str, type[Check]] = {}


class Check:
    """Base class: every hook is a no-op; a check overrides the ones it needs. One instance per probe."""

    name = ""
    # the other finding names this check reports, each with what it finds (``--list-checks`` lists them too)
    reports: ClassVar[dict[str, str]] = {}

    def start(self, probe: Probe) -> None:
        """The probe was installed (before the program's first watched forward)."""

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        """A top-level module forward finished (a module with parameters called outside any other)."""

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        """A loss function (``cross_entropy``, ``nll_loss``, ``binary_cross_entropy_with_logits``) returned."""

    def on_backward(self, probe: Probe, ev: BackwardEvent) -> None:
        """``tensor.backward()`` is about to run."""

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        """An optimizer's ``step`` is about to run."""

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        """An optimizer's ``step`` returned."""

    def on_item(self, probe: Probe, tensor: Any) -> None:
        """``tensor.item()`` was called on an accelerator tensor (a host sync)."""

    def on_call(self, probe: Probe, ev: CallEvent) -> None:
        """A watched call returned (``clip_grad_norm_``, ``scaler.scale``, ``scaler.unscale_``, ``sampler.iter``,
        ``loader.next``; see ``expkit.doctor.probe._watched_calls``)."""

    def finish(self, probe: Probe) -> None:
        """The watched steps are over (or the program ends): report what was pending."""


def register(cls: type[Check]) -> type[Check]:
    """Class decorator: add a check to the registry under its ``name``."""
    if not cls.name:
        raise ValueError(f"{cls.__qualname__} has no name")
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"two checks are named {cls.name!r}")
    _REGISTRY[cls.name] = cls
    return cls


@dataclass(frozen=True)
class CheckInfo:
    """One registered check as ``expkit doctor --list-checks`` shows it: its name and what it finds (the first
    sentence of its docstring)."""

    name: str
    finds: str


def describe_checks() -> tuple[CheckInfo, ...]:
    """Every finding name with what it finds, by name: each registered check (the first sentence of its
    docstring) and the other names it reports (its ``reports``).

    Example:
        >>> any(c.name == "gradient_cut" for c in describe_checks())
        True
    """
    out = []
    for name, cls in all_checks().items():
        doc = " ".join((cls.__doc__ or "").split())
        first = doc.split(". ")[0].rstrip(".") + "." if doc else ""
        out.append(CheckInfo(name, first))
        out.extend(CheckInfo(other, what) for other, what in cls.reports.items())
    return tuple(sorted(out, key=lambda c: c.name))


def all_checks() -> dict[str, type[Check]]:
    """Every registered check by name (imports each module of this package once)."""
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    return dict(sorted(_REGISTRY.items()))
