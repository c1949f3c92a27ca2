"""A module of the trained model that never runs (issue 32): its parameters are trainable and an optimizer steps
them, yet in none of the watched steps did its forward run, so it never gets a gradient and never trains.
DistributedDataParallel raises on it unless ``find_unused_parameters=True`` silences the error; a plain loop says
nothing. The usual cause is a forward that calls a sibling twice (``h = self.stage1(h)`` where ``self.stage2`` was
meant): when a module of the same class and parameter shapes ran more than once in one step, the finding names
that second call, else the line that built the idle module."""

from __future__ import annotations

import inspect
import re
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import is_user_file, user_frame, user_line_of

if TYPE_CHECKING:
    from expkit.doctor.probe import Probe, StepEvent

# containers whose members a forward may pick per input (MoE experts, per-task heads): a member idle for two
# steps while another member ran is not evidence of a bug; a container none of whose members ran is (a peft
# adapter's lora_A/lora_B dicts, whose wrapper a custom forward bypasses with F.linear(x, layer.weight): round
# fifteen, batch18/bugs/peft_lora_mixer_fast_path_weight.py, https://github.com/state-spaces/mamba/issues/279)
_SELECTABLE = (nn.ModuleList, nn.ModuleDict)


def _signature(module: nn.Module) -> tuple[Any, ...]:
    return (type(module), tuple((n, tuple(p.shape)) for n, p in module.named_parameters()))


@register
class ModuleNeverRuns(Check):
    """A submodule of a trained model whose trainable parameters an optimizer steps, and whose forward ran in
    none of the watched steps: it never gets a gradient (under DDP, ``find_unused_parameters=True`` hides the
    error that would say so)."""

    name = "module_never_runs"

    def __init__(self) -> None:
        self.ran: set[int] = set()
        self.calls: dict[int, int] = {}  # id(module) -> forward calls since the last step
        self.repeat_site: dict[int, tuple[str | None, int | None]] = {}  # id(module) -> where it ran again
        self.held: dict[int, torch.optim.Optimizer] = {}
        self.handle: Any = None

    def start(self, probe: Probe) -> None:
        from torch.nn.modules import module as module_mod

        self.handle = module_mod.register_module_forward_pre_hook(self._pre)

    def _pre(self, module: nn.Module, inputs: Any) -> None:
        if not torch.is_grad_enabled():
            return
        key = id(module)
        self.ran.add(key)
        if not module._parameters:
            return
        n = self.calls.get(key, 0) + 1
        self.calls[key] = n
        if n == 2 and key not in self.repeat_site:
            self.repeat_site[key] = user_frame(3)

    def on_step_pre(self, probe: Probe, ev: StepEvent) -> None:
        self.calls = {}
        self.held[id(ev.optimizer)] = ev.optimizer

    def finish(self, probe: Probe) -> None:
        if self.handle is not None:
            self.handle.remove()
            self.handle = None
        if not self.ran:
            return
        held = {id(p) for opt in self.held.values() for g in opt.param_groups for p in g["params"]}
        for root in probe.trained_roots():
            self._judge(probe, root, held)

    def _judge(self, probe: Probe, root: nn.Module, held: set[int]) -> None:
        parents: dict[int, nn.Module] = {}
        for parent in root.modules():
            for child in parent.children():
                parents.setdefault(id(child), parent)
        for name, module in root.named_modules():
            own = [p for p in module._parameters.values() if p is not None]
            holder = parents.get(id(module))
            if not own or id(module) in self.ran or (isinstance(holder, _SELECTABLE) and self._picked(holder)):
                continue
            if not all(p.requires_grad and id(p) in held and (p.grad is None or not p.grad.any()) for p in own):
                continue
            if any(id(m) in self.ran for m in module.modules()):
                continue  # a container whose parts ran (its own parameters used by a custom forward elsewhere)
            self._report(probe, root, name, module)

    def _read_around(self, root: nn.Module, name: str) -> tuple[str | None, int | None] | None:
        """The line of the nearest enclosing module that ran whose own ``forward`` reads the attribute holding the
        idle module without calling it (``F.linear(x, self.in_proj.weight)`` past a wrapper's forward), else None."""
        parts = name.split(".")
        for k in range(len(parts) - 1, -1, -1):
            try:
                ancestor = root.get_submodule(".".join(parts[:k])) if k else root
            except AttributeError:
                continue
            if id(ancestor) not in self.ran:
                continue
            try:
                lines, first = inspect.getsourcelines(type(ancestor).forward)
                file = inspect.getsourcefile(type(ancestor).forward)
            except (OSError, TypeError):
                return None
            if file is None or not is_user_file(file):
                return None
            pattern = re.compile(rf"\bself\.{re.escape(parts[k])}\b")
            hits = [first + i for i, text in enumerate(lines) if pattern.search(text.split("#", 1)[0])]
            return (file, hits[0]) if hits else None
        return None

    def _picked(self, container: nn.Module) -> bool:
        """Some member of ``container`` ran: the forward picks among them."""
        return any(id(m) in self.ran for m in container.modules() if m is not container)

    def _report(self, probe: Probe, root: nn.Module, name: str, module: nn.Module) -> None:
        twin = next(
            (
                (n, m)
                for n, m in root.named_modules()
                if m is not module and id(m) in self.repeat_site and _signature(m) == _signature(module)
            ),
            None,
        )
        where = self.repeat_site[id(twin[1])] if twin else None
        if where is None or where[0] is None:
            where = self._read_around(root, name)
        if where is None or where[0] is None:
            made = probe.origins.get(id(module))
            where = user_line_of(made[1]) if made else None
        count = sum(p.numel() for p in module.parameters())
        hint = f"; {twin[0]}, built like it, ran twice in one step (the second call is named)" if twin else ""
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{name} ({type(module).__name__}, {count:,} trainable parameters an optimizer steps) never ran "
            f"in the watched steps, so it never gets a gradient and never trains{hint}",
            evidence={"module": name, "params": count, "twin_ran_twice": twin[0] if twin else None},
            fix=f"call self.{name} in forward where it was meant (a copy-paste slip calls its sibling instead), or "
            "remove it from the model and the optimizer; find_unused_parameters=True only hides this under DDP",
            where=where if where and where[0] else None,
        )
