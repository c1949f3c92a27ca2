"""A Hugging Face classifier built as a regressor (issue 32): ``num_labels=1`` makes a
``...ForSequenceClassification`` compute a mean squared error between its one output and the labels
(transformers#1706). Given class ids (integer labels), it regresses the ids as ordered numbers: topic 3 is
"three times" topic 1, and no softmax ever separates the classes. Measured on the training forward: the labels the
model received are integers and the model resolved its problem type to regression. Names the ``num_labels=``
keyword (else where the model was built)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import argument_made_at, keyword_line, user_frame

if TYPE_CHECKING:
    from expkit.doctor.probe import ForwardEvent, Probe


@register
class ClassIdsRegressed(Check):
    """A classifier whose config resolved to regression (one output) trained on integer class ids."""

    name = "class_ids_regressed"

    def __init__(self) -> None:
        self.done = False

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        labels = ev.kwargs.get("labels")
        config = getattr(ev.module, "config", None)
        if self.done or not (ev.training and ev.grad_enabled) or not isinstance(labels, torch.Tensor):
            return
        if getattr(config, "problem_type", None) != "regression" or getattr(config, "num_labels", None) != 1:
            return
        if labels.is_floating_point() or labels.dtype == torch.bool or labels.numel() < 2:
            return
        classes = sorted({int(v) for v in labels.detach().flatten().unique()[:64]})
        if len(classes) < 2:
            return
        self.done = True
        file, line = probe.built_at(ev.module)
        written = keyword_line(file, ("num_labels",), before=line) if file is not None else None
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{type(ev.module).__name__} has num_labels=1, so it is a regressor: its loss is the mean "
            f"squared error between one output and the integer labels {classes[:6]}, class ids fitted as ordered "
            "numbers, not a classification",
            evidence={"num_labels": 1, "label_values": classes[:16], "labels_dtype": str(labels.dtype)},
            fix=f"num_labels={max(classes) + 1} (one logit per class: cross-entropy), or float labels with "
            "problem_type='regression' when the target really is a number",
            where=(file, written or line) if file is not None else None,
        )


START_SHARE = 0.5  # rows of decoder inputs that do not begin with the decoder's start token, at least this share


@register
class DecoderStartMissing(Check):
    """An encoder-decoder model (T5, BART: ``config.is_encoder_decoder``) trained on decoder inputs the program
    built itself whose rows do not begin with ``config.decoder_start_token_id``: the decoder is never trained to
    produce the first target token from the start token, which is where generation begins (``target[:, :-1]`` /
    ``target[:, 1:]`` written for a tokenizer that puts no BOS first: transformers#5987). The model builds them
    right from ``labels`` alone (``shift_tokens_right``). Measured on the first training forward that is given both
    ``decoder_input_ids`` and ``labels``; named where the decoder inputs were made."""

    name = "decoder_start_missing"

    def __init__(self) -> None:
        self.done = False

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        if self.done or not (ev.training and ev.grad_enabled):
            return
        config = getattr(ev.module, "config", None)
        start = getattr(config, "decoder_start_token_id", None)
        dec, labels = ev.kwargs.get("decoder_input_ids"), ev.kwargs.get("labels")
        if not getattr(config, "is_encoder_decoder", False) or not isinstance(start, int):
            return
        if not isinstance(dec, torch.Tensor) or not isinstance(labels, torch.Tensor) or dec.dim() != 2:
            return
        self.done = True
        if dec.shape[1] == 0:
            return
        off = float((dec[:, 0] != start).float().mean())
        if off < START_SHARE:
            return
        file, line = user_frame()
        made = argument_made_at(file, line, "decoder_input_ids") if file is not None else None
        probe.report(
            kind="bug",
            check=self.name,
            message=f"{off:.0%} of the decoder input rows given to {type(ev.module).__name__} do not begin with "
            f"its decoder_start_token_id ({start}) (first ids: {dec[:3, 0].tolist()}): the decoder is never trained "
            "to produce the first target token from the start token, where generation begins",
            evidence={"rows_without_start": off, "decoder_start_token_id": start, "first_ids": dec[:3, 0].tolist()},
            fix="pass labels only and let the model shift them (decoder_input_ids = shift_tokens_right(labels, "
            "pad_token_id, decoder_start_token_id)), and keep every target token in labels",
            where=(file, made) if file is not None and made is not None else None,
        )
