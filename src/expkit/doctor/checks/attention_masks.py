"""A float attention mask of zeros and ones (issue 32): a float ``key_padding_mask``/``attn_mask`` is *added* to
the attention logits, so a mask built as ``(tok == pad).float()`` gives the masked keys +1 (more attention)
instead of -inf; a boolean mask (or a float one of 0 and -inf) was meant. Seen at the attention calls the user
makes in the watched steps (``nn.MultiheadAttention``, ``F.scaled_dot_product_attention``, torch's Transformer
layers); named at the line that assigned the mask (the local variable passed in, followed up the user's frames),
else at the attention call."""

from __future__ import annotations

import contextlib
import inspect
import sys
from typing import TYPE_CHECKING, Any

import torch
import torch.nn.functional as F
from torch import nn

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import assigned_at

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
            where = assigned_at(mask, sys._getframe(2))
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
