"""A float attention mask of zeros and ones (issue 32): a float ``key_padding_mask``/``attn_mask`` is *added* to
the attention logits, so a mask built as ``(tok == pad).float()`` gives the masked keys +1 (more attention)
instead of -inf; a boolean mask (or a float one of 0 and -inf) was meant. Seen at the attention calls the user
makes in the watched steps (``nn.MultiheadAttention``, ``F.scaled_dot_product_attention``, torch's Transformer
layers); named at the line that assigned the mask (the local variable passed in, followed up the user's frames),
else at the attention call."""

from __future__ import annotations

import contextlib
import inspect
import linecache
import re
import sys
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from torch import nn

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import user_line_of

if TYPE_CHECKING:
    from expkit.doctor.probe import Probe

_LAYERS = (
    nn.MultiheadAttention,
    nn.TransformerEncoderLayer,
    nn.TransformerDecoderLayer,
    nn.TransformerEncoder,
    nn.TransformerDecoder,
    nn.Transformer,
)


def _ones_mask(mask: Any) -> bool:
    """A float tensor whose values are only 0 and 1, both present."""
    if not isinstance(mask, torch.Tensor) or not mask.is_floating_point() or mask.numel() < 2:
        return False
    with torch.no_grad():
        ones = mask == 1
        return bool(((mask == 0) | ones).all()) and bool(ones.any()) and not bool(ones.all())


def _yours(path: str) -> bool:
    return user_line_of(((path, 0),))[0] is not None


def _assigned_at(mask: torch.Tensor, frame: Any) -> tuple[str | None, int | None]:
    """The user line that assigned the local variable holding ``mask``, followed out through the user's frames
    (a mask handed down as an argument); else the innermost user frame's line (the mask built in the call)."""
    first: tuple[str | None, int | None] = (None, None)
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith("<frozen") and _yours(path):
            if first[0] is None:
                first = (path, frame.f_lineno)
            names = [k for k, v in frame.f_locals.items() if v is mask]
            if not names:  # built in the call's own arguments
                return path, frame.f_lineno
            found = _assignment(path, frame.f_code.co_firstlineno, frame.f_lineno, names)
            if found is not None:  # ambiguous (0): the line of the call in this frame
                return path, found or frame.f_lineno
        frame = frame.f_back
    return first


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _assignment(path: str, start: int, call: int, names: list[str]) -> int | None:
    """The line above ``call`` (in the function that starts at ``start``) that assigned one of ``names`` and
    surely ran: the nearest one in the call's own block, else the only one in a nested (conditional) block; 0
    when it is ambiguous, None when there is none (a parameter)."""
    pattern = re.compile(rf"^\s*(?:{'|'.join(map(re.escape, names))})\s*(?::[^=]*)?=[^=]")
    level = _indent(linecache.getline(path, call))
    nested: list[int] = []
    for line in range(call - 1, start, -1):
        text = linecache.getline(path, line)
        if pattern.match(text):
            if _indent(text) <= level:
                return line if not nested else 0
            nested.append(line)
    return (nested[0] if len(nested) == 1 else 0) if nested else None


@register
class AdditiveMaskOfOnes(Check):
    """An attention call given a float mask of only 0s and 1s: a float mask is added to the attention logits,
    so the masked positions get +1 (more attention) instead of -inf."""

    name = "additive_mask_of_ones"

    def __init__(self) -> None:
        self.depth = 0

    def start(self, probe: Probe) -> None:
        for cls in _LAYERS:
            probe.patch(cls, "forward", self._wrap(probe, inspect.signature(cls.forward)))
        probe.patch(F, "scaled_dot_product_attention", self._wrap(probe, None))

    def _wrap(self, probe: Probe, sig: inspect.Signature | None) -> Any:
        check = self

        def make(original: Any) -> Any:
            def attention(*args: Any, **kwargs: Any) -> Any:
                if check.depth or not probe.active or probe._in_check:
                    return original(*args, **kwargs)
                with contextlib.suppress(Exception):  # the check must not break the call
                    check._look(probe, sig, args, kwargs)
                check.depth += 1
                try:
                    return original(*args, **kwargs)
                finally:
                    check.depth -= 1

            return attention

        return make

    def _look(self, probe: Probe, sig: inspect.Signature | None, args: Any, kwargs: dict[str, Any]) -> None:
        if sig is None:  # scaled_dot_product_attention(query, key, value, attn_mask=None, ...)
            masks = {"attn_mask": args[3] if len(args) > 3 else kwargs.get("attn_mask")}
            call = "F.scaled_dot_product_attention"
        else:
            bound = sig.bind_partial(*args, **kwargs).arguments
            masks = {k: v for k, v in bound.items() if "mask" in k}
            call = f"{type(args[0]).__name__}.forward" if args else "attention"
        for name, mask in masks.items():
            if not isinstance(mask, torch.Tensor) or not _ones_mask(mask):
                continue
            where = _assigned_at(mask, sys._getframe(2))
            probe.report(
                kind="bug",
                check=self.name,
                message=f"{call} got {name} as a float tensor of only 0 and 1 ({int((mask == 1).sum().item())} of "
                f"{mask.numel()} ones): a float mask is added to the attention logits, so the positions marked 1 "
                "get +1, more attention, instead of being masked out",
                evidence={"argument": name, "dtype": str(mask.dtype), "shape": list(mask.shape), "call": call},
                fix="pass a boolean mask (True = masked for nn.MultiheadAttention/Transformer layers; True = attend "
                "for scaled_dot_product_attention), or a float mask of 0 and -inf "
                "(mask.float().masked_fill(mask.bool(), float('-inf')))",
                where=where if where[0] is not None else None,
            )
            return
