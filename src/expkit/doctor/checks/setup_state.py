"""The model's state as the program set it up, before training: a checkpoint loaded with ``strict=False`` that
filled little or none of the model (a ``model.``/``module.`` prefix mismatch silences every key error), one
module object registered at several places of one container (``nn.ModuleList([Block()] * n)``: every "copy"
shares one set of weights), and a freeze written as a plain attribute that is not the flag (``p.require_grad =
False``)."""

from __future__ import annotations

import inspect
import sys
from collections import Counter
from difflib import SequenceMatcher
from typing import TYPE_CHECKING, Any

from torch import nn

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import is_user_file, source_tokens, string_literals, user_frame, user_line_of

if TYPE_CHECKING:
    from expkit.doctor.probe import CallEvent, ForwardEvent, Probe

MISSING_SHARE = 0.5  # a non-strict load that left more than half of the model's weights (by elements) unfilled


def _strict(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """The ``strict`` argument of ``Module.load_state_dict(state_dict, strict=True, assign=False)``."""
    if "strict" in kwargs:
        return bool(kwargs["strict"])
    return bool(args[1]) if len(args) > 1 else True


def load_outcome(module: nn.Module, state_dict: Any, result: Any) -> dict[str, Any] | None:
    """What one non-strict ``load_state_dict`` filled, measured from its own return value: the share of the
    module's trainable parameter elements whose key was missing, and how many of the state dict's keys were
    used (matched) or went nowhere (unexpected). None when it cannot be read."""
    missing = getattr(result, "missing_keys", None)
    unexpected = getattr(result, "unexpected_keys", None)
    if missing is None or unexpected is None:
        return None
    try:
        given = len(state_dict)
    except TypeError:
        return None
    named = dict(module.named_parameters(remove_duplicate=False))
    unique = {id(p): p for p in named.values()}
    total = sum(p.numel() for p in unique.values())
    if total == 0:
        return None
    # parameters that do not require grad are left out of the missing share: peft's adapter loading leaves the
    # frozen base weights "missing" by design
    gone = {id(named[k]): named[k] for k in missing if k in named and named[k].requires_grad}
    missing_elems = sum(p.numel() for p in gone.values())
    return {
        "missing_param_share": missing_elems / total,
        "missing_params": len(gone),
        "model_params": len(unique),
        "state_dict_keys": given,
        "unexpected_keys": len(unexpected),
        "matched_keys": max(0, given - len(unexpected)),
        "unexpected_examples": [str(k) for k in list(unexpected)[:3]],
        "missing_examples": [str(k) for k in list(missing)[:3]],
    }


@register
class WeightsNotLoaded(Check):
    """A ``load_state_dict(..., strict=False)`` that filled little or nothing: more than half of the module's
    trainable parameter elements had their key missing while most of the given state dict's keys went nowhere
    (unexpected keys: a ``model.``/``module.`` prefix, a nested ``{"state_dict": ...}`` checkpoint), so the model
    trains from its random initialisation. Measured from the call's own return value; names the call's line."""

    name = "weights_not_loaded"

    def on_call(self, probe: Probe, ev: CallEvent) -> None:
        if ev.name == "module.load_state_dict" and not _strict(ev.args, ev.kwargs):
            state = ev.args[0] if ev.args else ev.kwargs.get("state_dict")
            self.judge(probe, ev.obj, state, ev.result)

    def judge(self, probe: Probe, module: nn.Module, state: Any, result: Any) -> bool:
        """Report the load when it filled little of ``module``; whether it did."""
        out = load_outcome(module, state, result)
        if out is None or out["state_dict_keys"] == 0 or out["unexpected_keys"] == 0:
            return False
        # little was loaded: most of the model's weights missing, and more of the given keys unused than used
        # (a backbone loaded into a model with a new head misses only the head and uses most keys)
        if not out["missing_param_share"] > MISSING_SHARE or out["unexpected_keys"] <= out["matched_keys"]:
            return False
        where = user_frame(2)
        probe.report(
            kind="bug",
            check=self.name,
            message=f"load_state_dict(strict=False) on {type(module).__name__} left "
            f"{out['missing_param_share']:.0%} of its trainable weights unloaded ({out['missing_params']} of "
            f"{out['model_params']} parameters missing) while {out['unexpected_keys']} of the "
            f"{out['state_dict_keys']} checkpoint keys matched nothing (e.g. {out['unexpected_examples'][:2]}): "
            "the model keeps its random initialisation",
            evidence=out,
            fix="make the keys match (strip the prefix: {k.removeprefix('module.'): v for k, v in sd.items()}, or "
            "load ckpt['state_dict']) and load with strict=True, or check the returned missing_keys",
            where=where if where[0] is not None else None,
        )
        return True


CONTAINERS = (nn.ModuleList, nn.Sequential, nn.ModuleDict)


def repeated_children(root: nn.Module) -> list[tuple[str, nn.Module, list[str], nn.Module]]:
    """``(container name, container, child keys, child)`` for every module object with parameters that one
    ModuleList/Sequential/ModuleDict of ``root`` holds at two or more places."""
    out: list[tuple[str, nn.Module, list[str], nn.Module]] = []
    for name, mod in root.named_modules(remove_duplicate=True):
        if not isinstance(mod, CONTAINERS):
            continue
        counts = Counter(id(c) for c in mod._modules.values() if c is not None)
        for cid, n in counts.items():
            if n < 2:
                continue
            keys = [k for k, c in mod._modules.items() if c is not None and id(c) == cid]
            child = mod._modules[keys[0]]
            if child is not None and next(child.parameters(), None) is not None:
                out.append((name, mod, keys, child))
    return out


@register
class DuplicateModuleInContainer(Check):
    """One module object with weights registered at two or more places of the same ModuleList, Sequential or
    ModuleDict (``nn.ModuleList([Block()] * n)``): every "copy" is the same layer with one set of weights.
    Measured on the module tree at the first training forward of each trained root; names the container's
    assignment. Weight tying, one module called several times in forward, and a module shared by two different
    containers are not flagged."""

    name = "duplicate_module_in_container"

    def __init__(self) -> None:
        self.seen: set[int] = set()

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        root = ev.module
        if id(root) in self.seen or not (ev.training and ev.grad_enabled):
            return
        self.seen.add(id(root))
        if not any(root is r for r in probe.trained_roots()):
            return
        for name, container, keys, child in repeated_children(root):
            rec = probe.origins.get(id(container)) or probe.made_at.get(id(container))
            where = user_line_of(rec[1]) if rec else (None, None)
            params = sum(p.numel() for p in child.parameters())
            label = name or type(root).__name__
            probe.report(
                kind="bug",
                check=self.name,
                message=f"{type(container).__name__} '{label}' holds one {type(child).__name__} object at "
                f"{len(keys)} places ({', '.join(keys[:6])}): they are one layer with one set of {params:,} "
                "weights, not independent copies",
                evidence={
                    "container": label,
                    "places": len(keys),
                    "keys": keys[:8],
                    "module": type(child).__name__,
                    "shared_params": params,
                },
                fix="build a new module for each place: nn.ModuleList([Block() for _ in range(n)]) "
                "(or copy.deepcopy(block) per place), not [Block()] * n",
                where=where if where[0] is not None else None,
            )


FREEZE_FLAG = "requires_grad"


def _misspelled_freeze(obj: Any, exact: bool) -> str | None:
    """The name of a plain attribute on ``obj`` that was meant as ``requires_grad`` and set to False: a misspelling
    (``require_grad``, ``requires_grads``) on a parameter, and on a module also the right spelling (a module has
    no such flag: ``encoder.requires_grad = False`` freezes nothing)."""
    for key, value in vars(obj).items():
        if value is not False or not isinstance(key, str) or key.startswith("_"):
            continue
        if (exact and key == FREEZE_FLAG) or (key != FREEZE_FLAG and _close(key, FREEZE_FLAG)):
            return key
    return None


def _close(a: str, b: str) -> bool:
    return SequenceMatcher(None, a.lower(), b).ratio() >= 0.8


def _attribute_line(files: list[str], attribute: str) -> tuple[str | None, int | None]:
    """The first ``.<attribute> =`` (or ``setattr(..., "<attribute>", ...)``) in the user's files."""
    for file in files:
        tokens = source_tokens(file)
        for a, b, c in zip(tokens, tokens[1:], tokens[2:], strict=False):
            if a.string == "." and b.string == attribute and c.string == "=":
                return file, b.start[0]
        line = next((ln for ln, value in string_literals(file) if value == attribute), None)
        if line is not None:
            return file, line
    return None, None


@register
class FreezeFlagMisspelled(Check):
    """At the first training forward of each trained root: parameters (or a submodule) that carry a plain
    attribute meant as ``requires_grad`` and set to False (``p.require_grad = False``, ``module.requires_grad =
    False``), while the parameters it was meant to freeze still require grad: the freeze did nothing and the
    "frozen" part trains. Names the assignment."""

    name = "freeze_flag_misspelled"

    def __init__(self) -> None:
        self.seen: set[int] = set()

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        root = ev.module
        if id(root) in self.seen or not (ev.training and ev.grad_enabled):
            return
        self.seen.add(id(root))
        hits: dict[str, int] = {}  # attribute -> parameters still trainable that carry it (or sit under it)
        for p in root.parameters():
            key = _misspelled_freeze(p, exact=False)
            if key is not None and p.requires_grad:
                hits[key] = hits.get(key, 0) + 1
        for module in root.modules():
            key = _misspelled_freeze(module, exact=True)
            if key is not None:
                live = sum(1 for p in module.parameters() if p.requires_grad)
                if live:
                    hits[key] = hits.get(key, 0) + live
        if not hits:
            return
        attribute, count = max(hits.items(), key=lambda kv: kv[1])
        main = getattr(sys.modules.get("__main__"), "__file__", None)
        files = [f for f in (main, inspect.getsourcefile(type(root)), user_frame(2)[0]) if f]
        files = [f for f in dict.fromkeys(files) if is_user_file(f)]
        where = _attribute_line(files, attribute)
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{count} parameter(s) of {type(root).__name__} carry a plain attribute {attribute!r} = False "
            "(meant as requires_grad) and still require grad: the freeze did nothing, the part meant to stay "
            "fixed trains",
            evidence={"attribute": attribute, "still_trainable": count},
            fix="freeze with p.requires_grad = False on each parameter, or module.requires_grad_(False)",
            where=where if where[0] is not None else None,
        )
