"""Loss masks on the batch a causal-LM loss actually saw: pad positions counted, nothing trained, the stop token
or the answer masked, labels shifted by the user and again by the model.

Two places are read. A Hugging Face causal LM called with ``labels=`` (its own loss shifts them by one and skips
``-100``): the ``input_ids``, ``attention_mask`` and ``labels`` of that forward. A hand-written loop: the target of
``cross_entropy`` (skipping ``ignore_index``) against the token ids of the forward before it. The rules are the
SFT label audit's (``expkit.finetune.labels``): ``-100`` is the skipped label, every trained span must end with
its stop token, and a pad id equal to the stop id makes a collator that masks padding mask every real stop.

A pad_in_loss names the line that made the labels tensor when the user's code made it: during the first steps
each DataLoader batch is built under a recording torch-function mode (the collate_fn's ``labels =
input_ids.clone()``), carried through ``.to``/``.view``; found again by value when the trainer copied it.
"""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from torch.overrides import TorchFunctionMode

from expkit.doctor.checks import Check, register
from expkit.doctor.checks.perturb import close_mode, op_caller
from expkit.doctor.findings import argument_made_at, assigned_from, user_frame

if TYPE_CHECKING:
    from expkit.doctor.probe import ForwardEvent, LossEvent, Probe

SHIFTED_AGREEMENT = 0.98  # share of trained labels equal to the *next* input token: a random LM gets ~1/V
MIN_TRAINED = 8  # fewer trained labels can line up with the next token by chance
VISIBLE_SHARE = 0.5  # a masked LM's trained labels equal to the visible input (BERT's 80/10/10 keeps a tenth)
# a padding guess without a pad id: >= 2 rows end with a run (>= 2 long) of one id that is not in the loss mask
MIN_PAD_ROWS = 2


def _classes(logits: torch.Tensor) -> int:
    """The number of classes of a cross_entropy input ((N, C) or (N, C, d1, ...)); a 1-D input is one sample's C."""
    return int(logits.shape[1] if logits.dim() >= 2 else logits.shape[0])


@dataclass(frozen=True)
class _Batch:
    """One batch as the loss saw it: ``labels[b, t]`` is the target for token ``ids[b, t]`` (unshifted, HF style),
    ``attended`` the real (non-pad) positions, ``stops`` the stop-token ids, ``pad_id`` the configured pad."""

    ids: torch.Tensor
    labels: torch.Tensor
    attended: torch.Tensor | None
    stops: tuple[int, ...]
    pad_id: int | None
    ignore: int


def _ids_of(value: Any) -> tuple[int, ...]:
    if value is None:
        return ()
    if isinstance(value, int):
        return (value,)
    return tuple(int(v) for v in value if isinstance(v, int))


def _config_ids(module: Any) -> tuple[tuple[int, ...], int | None]:
    """(stop ids, pad id) from a Hugging Face model's config and generation config (none for a plain module)."""
    stops: tuple[int, ...] = ()
    pad = None
    for cfg in (getattr(module, "config", None), getattr(module, "generation_config", None)):
        if cfg is None:
            continue
        stops += tuple(i for i in _ids_of(getattr(cfg, "eos_token_id", None)) if i not in stops)
        pad = pad if pad is not None else getattr(cfg, "pad_token_id", None)
    return stops, pad if isinstance(pad, int) else None


def _tokenizer_ids(vocab: int | None) -> tuple[tuple[int, ...], int | None]:
    """(eos ids, pad id) of the program's live Hugging Face tokenizers whose vocabulary is the model's (``len``),
    found through the garbage collector; empty when there is none or they disagree (which one made the batch is
    not known)."""
    import gc
    import sys

    if "transformers" not in sys.modules or vocab is None:
        return (), None
    base = getattr(sys.modules["transformers"], "PreTrainedTokenizerBase", None)
    # type(obj), not isinstance: isinstance reads __class__, which some objects answer with a warning (printed
    # into the program's output)
    found = [obj for obj in gc.get_objects() if issubclass(type(obj), base)] if isinstance(base, type) else []
    ids = set()
    for tok in found:
        try:
            if len(tok) != vocab:
                continue
        except Exception:  # noqa: BLE001 - a half-built tokenizer: not the one that made the batch
            continue
        eos, pad = getattr(tok, "eos_token_id", None), getattr(tok, "pad_token_id", None)
        ids.add((tuple(_ids_of(eos)), pad if isinstance(pad, int) else None))
    return next(iter(ids)) if len(ids) == 1 else ((), None)


def _with_tokenizer(
    module: Any, stops: tuple[int, ...], pad: int | None, tokenizer: tuple[tuple[int, ...], int | None]
) -> tuple[tuple[int, ...], int | None]:
    """The config's stop and pad ids, corrected by the tokenizer's: a config left at its class defaults (GPT-2's
    eos 50256 in a vocabulary of 32) names ids the model never sees; the tokenizer's are the ones in the data."""
    vocab = getattr(getattr(module, "config", None), "vocab_size", None)
    if not isinstance(vocab, int):
        return stops, pad
    seen = tuple(i for i in stops if 0 <= i < vocab)
    seen += tuple(i for i in tokenizer[0] if 0 <= i < vocab and i not in seen)
    if pad is None or not 0 <= pad < vocab:
        pad = tokenizer[1] if tokenizer[1] is not None and 0 <= tokenizer[1] < vocab else None
    return seen, pad


def _is_causal_lm(module: Any) -> bool:
    """A Hugging Face (or peft) causal LM: its forward shifts ``labels`` by one itself."""
    config = getattr(module, "config", None)
    name = type(module).__name__
    causal = "CausalLM" in name or "LMHead" in name
    return causal and config is not None and not getattr(config, "is_encoder_decoder", False)


def _is_seq2seq(module: Any) -> bool:
    """A Hugging Face encoder-decoder (T5, BART): its ``labels`` are the decoder's targets, scored position for
    position against ``ignore_index=-100`` (the decoder's inputs are the labels shifted right)."""
    config = getattr(module, "config", None)
    return config is not None and bool(getattr(config, "is_encoder_decoder", False))


def _is_masked_lm(module: Any) -> bool:
    """A Hugging Face masked LM (BERT-style, bidirectional): its labels are compared with its inputs position for
    position, so only the positions hidden from it should be trained."""
    config = getattr(module, "config", None)
    name = type(module).__name__
    return "MaskedLM" in name and config is not None and not getattr(config, "is_encoder_decoder", False)


def _trailing_run(x: torch.Tensor) -> torch.Tensor:
    """Per row, the positions of the run of equal values that ends the row."""
    same = (x == x[:, -1:]).int()
    return torch.flip(torch.cumprod(torch.flip(same, [1]), dim=1), [1]).bool()


def _padding(b: _Batch) -> torch.Tensor:
    """Where the padding is: ``attention_mask == 0``; else, read on the labels themselves, the trailing run of
    the pad id, or with no pad id a trailing run (>= 2 long) of one id that ends at least ``MIN_PAD_ROWS`` rows
    and occurs nowhere else. Without a mask the run's first token is kept when it may be the real stop token
    (pad is the stop id, or the pad id is a guess)."""
    if b.attended is not None:
        return ~b.attended
    labels = b.labels
    last = labels[:, -1:]
    run = _trailing_run(labels) & (last != b.ignore)
    if b.pad_id is not None:
        run &= last == b.pad_id
    else:
        long_run = run.sum(dim=1) >= 2
        ends = torch.unique(last[long_run])
        if int(long_run.sum()) < MIN_PAD_ROWS or ends.numel() != 1 or bool(((labels == ends[0]) & ~run).any()):
            return torch.zeros_like(run)
        run &= long_run[:, None]
    if b.pad_id is None or b.pad_id in b.stops:
        run &= torch.nn.functional.pad(run[:, :-1], (1, 0), value=False)  # drop each run's first token
    return run


def _agreement(labels: torch.Tensor, ids: torch.Tensor, ignore: int) -> float:
    """Share of the trained labels equal to the token at their position (nan: none trained)."""
    trained = labels != ignore
    return float((labels == ids)[trained].float().mean()) if bool(trained.any()) else float("nan")


def _lead(y: torch.Tensor, ids: torch.Tensor, ignore: int) -> int | None:
    """How many positions the targets run ahead of the input tokens: the ``k`` in 0, 1, 2 for which target t equals
    token t + k at >= ``SHIFTED_AGREEMENT`` of the trained positions (1 is a next-token loss), None: neither."""
    for k in (1, 0, 2):
        n = min(y.shape[1], ids.shape[1] - k)
        trained = y[:, :n] != ignore
        if (
            n > 0
            and int(trained.sum()) >= MIN_TRAINED
            and _agreement(y[:, :n], ids[:, k : k + n], ignore) >= (SHIFTED_AGREEMENT)
        ):
            return k
    return None


def _real_tokens(b: _Batch) -> torch.Tensor:
    """The real (not padding) tokens: the attention mask; without one, all but the trailing run of the pad id or
    of a stop id (``pad_token = eos_token`` with no ``pad_token_id`` in the config), whose first token is kept
    when it is a stop id (the real end)."""
    if b.attended is not None:
        return b.attended
    last = b.ids[:, -1:]
    stop_end = torch.zeros_like(last, dtype=torch.bool)
    for s in b.stops:
        stop_end |= last == s
    run = _trailing_run(b.ids) & (stop_end | (last == b.pad_id if b.pad_id is not None else stop_end))
    first = run & ~torch.nn.functional.pad(run[:, :-1], (1, 0), value=False)
    return ~(run & ~(first & stop_end))


def _masked_stops(b: _Batch) -> tuple[int, int, int]:
    """(rows whose trained span is followed by a masked stop token, of which the stop alone is masked (the answer
    trained), rows with a trained span). The audit's rule: a trained span ends with the stop token."""
    trained = b.labels != b.ignore
    real = _real_tokens(b)
    stop = torch.zeros_like(trained)
    for s in b.stops:
        stop |= b.ids == s
    masked_stop_rows = eos_only_rows = spans = 0
    for r in range(trained.shape[0]):
        pos = torch.nonzero(trained[r] & real[r]).reshape(-1)
        if pos.numel() == 0:
            continue
        spans += 1
        tail = torch.arange(int(pos[-1]) + 1, trained.shape[1])
        tail = tail[real[r, tail]]  # the real tokens after the last trained one
        hits = torch.nonzero(stop[r, tail]).reshape(-1)
        if hits.numel():
            masked_stop_rows += 1
            eos_only_rows += int(hits[0]) == 0
    return masked_stop_rows, eos_only_rows, spans


# ops that keep a tensor's values (device, dtype, layout, a slice): their output was made where their input was
_SAME_VALUES = frozenset({
    "to", "cuda", "cpu", "long", "int", "type", "view", "reshape", "flatten", "contiguous", "detach", "__get__",
    "__getitem__",
})  # fmt: skip
_LABEL_DTYPES = (torch.int64, torch.int32, torch.int16, torch.uint8, torch.int8)
WATCHED_STEPS = 2  # the made-at record runs until the first steps end (the batches the loss rules read)


MAX_PRINTED = 65_536  # values of a tensor whose fingerprint outlives it (a sample the collate stacks)


def _fingerprint(x: torch.Tensor) -> tuple[Any, ...]:
    flat = x.reshape(-1)
    return (tuple(x.shape), x.dtype, int(flat.sum()), int(flat[::7].sum()), tuple(flat[:4].tolist()))


class _MadeAt(TorchFunctionMode):
    """Until the first steps end: the user line that made each integer tensor (``labels = input_ids.clone()`` in
    a collator or the training loop), carried through ops that keep the values (``.to(device)``, ``.view(-1)``);
    an in-place write into one (``labels[:, :-1] = ids[:, 1:]``) makes the writing line its own."""

    def __init__(self, probe: Probe | None = None) -> None:
        super().__init__()
        self.on = True
        self.probe = probe  # its checks' own ops (while it dispatches) are not the program's: not recorded
        self.made: dict[int, tuple[weakref.ref[torch.Tensor], tuple[str, int]]] = {}
        # the line that made each tensor before any in-place write into it (torch.full(..., pad) in a collator
        # that then writes each row's tokens in): where the values no write replaced came from
        self.born: dict[int, tuple[weakref.ref[torch.Tensor], tuple[str, int]]] = {}
        self.prints: dict[tuple[Any, ...], tuple[str, int]] = {}  # a small tensor's values, kept past its life
        self.yours: dict[str, bool] = {}

    def _of(self, x: Any, born: bool) -> tuple[str, int] | None:
        for table in (self.born, self.made) if born else (self.made,):
            rec = table.get(id(x)) if isinstance(x, torch.Tensor) else None
            if rec is not None and rec[0]() is x:
                return rec[1]
        return None

    def line_of(self, t: Any, exact: bool = False, born: bool = False) -> tuple[str, int] | None:
        """Where ``t`` (or the tensor it views) was made (``born``: before any in-place write into it); else a
        recorded tensor of the same shape and values (the batch moved to the device by the trainer is a copy)."""
        for x in (t, getattr(t, "_base", None)):
            line = self._of(x, born)
            if line is not None:
                return line
        if exact or not isinstance(t, torch.Tensor):
            return None
        if t.dim() >= 2:  # a batch the default collate stacked: its first sample, made in a Dataset's __getitem__
            line = self.prints.get(_fingerprint(t[0].detach()))
            if line is not None:
                return line
        want = t.detach().reshape(-1)
        for ref, line in reversed(list(self.made.values())[-64:]):
            x = ref()
            if x is None or x.dtype != t.dtype:
                continue
            # the tensor itself on another device, or flattened, or shifted by one for a next-token target
            views = (x, x[:, 1:], x[:, :-1]) if x.dim() == 2 else (x,)
            for v in views:
                if v.numel() == want.numel() and torch.equal(v.reshape(-1).to(want.device), want):
                    return (self._of(x, born) or line) if born else line
        return None

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if getattr(func, "__module__", "").startswith("expkit."):  # a probe's wrapper: it already saw this call
            func = getattr(func, "__wrapped__", func)
        result = func(*args, **(kwargs or {}))
        if not self.on or (self.probe is not None and self.probe._in_check):
            return result
        name = getattr(func, "__name__", "")
        written = name == "__setitem__" and args and isinstance(args[0], torch.Tensor)
        out = args[0] if written else result  # the tensor written into is remade at the writing line
        if isinstance(out, torch.Tensor) and out.dtype in _LABEL_DTYPES and out.dim() > 0:
            with contextlib.suppress(Exception):  # recording must never break the program
                self._record(name, args, out)
        return result

    def _record(self, name: str, args: Any, out: torch.Tensor) -> None:
        line: tuple[str, int] | None = None
        if name in _SAME_VALUES and args:
            line = self.line_of(args[0], exact=True)
        if line is None:
            file, at = op_caller(self.yours, 3)
            line = (file, at) if file is not None and at is not None else None
        if line is not None:
            if len(self.made) > 100_000:
                self.made = {k: v for k, v in self.made.items() if v[0]() is not None}
                self.born = {k: v for k, v in self.born.items() if v[0]() is not None}
            self.made[id(out)] = (weakref.ref(out), line)
            first = self.born.get(id(out))
            if name != "__setitem__" and (first is None or first[0]() is not out):  # .to() returning itself: kept
                self.born[id(out)] = self.made[id(out)]
            if out.numel() <= MAX_PRINTED and len(self.prints) < 10_000:  # a sample, freed once collated
                self.prints[_fingerprint(out)] = line


def made_line(probe: Probe, t: Any) -> tuple[str, int] | None:
    """The user's line that made the integer tensor ``t`` (a label batch, a mask), when the loss-mask check's
    made-at record saw it being made in a DataLoader's batch during the watched steps."""
    check = next((c for c in probe.checks if isinstance(c, LossMask)), None)
    return check.made.line_of(t) if check is not None and check.made is not None else None


@register
class LossMask(Check):
    """What a causal-LM loss counted, from the labels of an HF model's forward or a hand-written cross-entropy."""

    name = "loss_mask"
    reports: ClassVar[dict[str, str]] = {
        "pad_in_loss": "Pad positions of a causal-LM loss's labels are trained (the model learns to predict padding).",
        "eos_masked": "The stop token after the trained tokens is masked: the model never learns to stop.",
        "answer_masked": "The loss mask is inverted: the answer and its stop token are masked, the prompt is trained.",
        "no_trained_label": "Every label position is the ignore index: the loss trains nothing.",
        "labels_shifted_twice": "Labels shifted by hand and again by the model: token t learns token t + 2.",
        "masked_lm_trains_visible_tokens": "A masked LM's trained labels are mostly the tokens the model sees.",
    }

    def __init__(self) -> None:
        self.last: tuple[torch.Tensor, torch.Tensor | None, tuple[int, ...], int | None] | None = None
        self.made: _MadeAt | None = None
        self.labels: Any = None  # the labels tensor being judged (its made-at line names a pad_in_loss)
        self.ids: Any = None  # and the token ids given with them
        self.last_ids: Any = None
        self.steps = 0
        self.tokenizer: tuple[tuple[int, ...], int | None] | None = None  # read once, at the first forward

    def start(self, probe: Probe) -> None:
        # labels are made in a DataLoader's collate_fn or in the training loop: record from the start until the
        # watched steps end
        self.made = _MadeAt(probe)
        self.made.__enter__()

    def _stop_recording(self) -> None:
        if self.made is not None and self.made.on:
            close_mode(self.made)
            self.made.made.clear()
            self.made.prints.clear()
            self.made.born.clear()

    def finish(self, probe: Probe) -> None:
        self._stop_recording()

    def on_step_post(self, probe: Probe, ev: Any) -> None:
        self.last = None  # token ids are read again at the next step's forward
        self.steps += 1
        if self.steps >= WATCHED_STEPS:
            self._stop_recording()

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        if not (ev.training and ev.grad_enabled):
            return
        ids = ev.kwargs.get("input_ids", ev.first_tensor())
        if not isinstance(ids, torch.Tensor) or ids.is_floating_point() or ids.dim() != 2 or ids.shape[1] <= 2:
            return  # a later layer of a model written as separate modules (embedding, RNN, head): keep its ids
        mask = ev.kwargs.get("attention_mask")
        attended = mask.detach().bool() if isinstance(mask, torch.Tensor) and mask.shape == ids.shape else None
        stops, pad = _config_ids(ev.module)
        if self.tokenizer is None:
            self.tokenizer = _tokenizer_ids(getattr(getattr(ev.module, "config", None), "vocab_size", None))
        stops, pad = _with_tokenizer(ev.module, stops, pad, self.tokenizer)
        self.last = (ids.detach(), attended, stops, pad)
        self.last_ids = ids
        labels = ev.kwargs.get("labels")
        if isinstance(labels, torch.Tensor) and labels.shape == ids.shape and _is_masked_lm(ev.module):
            self.labels, self.ids = labels, ids
            self._visible_trained(probe, ids.detach(), labels.detach())
        if isinstance(labels, torch.Tensor) and labels.shape == ids.shape and _is_causal_lm(ev.module):
            from expkit.finetune.labels import IGNORE

            batch = _Batch(ids.detach(), labels.detach(), attended, stops, pad, IGNORE)
            self.labels, self.ids = labels, ids
            self._judge(probe, batch, hf=True)
        elif isinstance(labels, torch.Tensor) and labels.dim() == 2 and _is_seq2seq(ev.module):
            from expkit.finetune.labels import IGNORE

            # the decoder's targets: padding is where decoder_attention_mask is 0, else the labels' trailing pad run
            dmask = ev.kwargs.get("decoder_attention_mask")
            dec = dmask.detach().bool() if isinstance(dmask, torch.Tensor) and dmask.shape == labels.shape else None
            self.labels, self.ids = labels, ids
            self._pad_counted(
                probe,
                _Batch(labels.detach(), labels.detach(), dec, (), pad, IGNORE),
                labels.detach() != IGNORE,
                "the `labels` given to the encoder-decoder",
                int(labels.numel()),
                hf=True,
            )

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        if probe.inside_forward or ev.function != "cross_entropy" or self.last is None:
            return  # a loss inside a forward is the model's own (an HF causal LM's), judged at its forward
        y = ev.target
        if not isinstance(y, torch.Tensor) or y.is_floating_point():
            return
        ids, attended, stops, pad = self.last
        rows, width = ids.shape
        if y.numel() not in (rows * width, rows * (width - 1)):
            return
        ignore = int(ev.kwargs.get("ignore_index", -100))
        y = y.detach().reshape(rows, -1).to(ids.device)
        lead = _lead(y, ids, ignore)
        if lead == 2:
            self._two_ahead(probe, y, ids, ignore)
            return
        if lead == 1 and y.shape[1] == width:  # next-token targets from the data (x = seq[:-1], y = seq[1:]); the
            ids = torch.cat([ids[:, 1:], y[:, -1:]], dim=1)  # token after the last input is the last target itself
            attended = None if attended is None else torch.cat([attended[:, 1:], attended[:, -1:]], dim=1)
        elif lead == 1:  # logits[:, :-1] against ids[:, 1:]
            ids, attended = ids[:, 1:], None if attended is None else attended[:, 1:]
        if lead is None or y.shape != ids.shape:  # targets that are not these tokens (a seq2seq target): only the
            if _classes(ev.input) <= int(ids.max()):  # rules read on the labels alone apply, when the targets are
                return  # tokens at all: fewer classes than the input's token ids are tags (token classification)
            ids, attended, stops = y, None, ()
        self.labels, self.ids = ev.target, self.last_ids
        self._judge(probe, _Batch(ids, y, attended, stops, pad, ignore), hf=False)

    def _two_ahead(self, probe: Probe, y: torch.Tensor, ids: torch.Tensor, ignore: int) -> None:
        n = min(y.shape[1], ids.shape[1] - 2)
        trained = y[:, :n] != ignore
        probe.report(
            kind="bug",
            check="labels_shifted_twice",
            message=f"the cross_entropy targets are the input token two positions ahead at {int(trained.sum())} "
            "trained positions: targets already shifted by one were shifted again, so token t learns to predict "
            "token t + 2",
            evidence={
                "trained_labels": int(trained.sum()),
                "equal_to_token_two_ahead": _agreement(y[:, :n], ids[:, 2 : 2 + n], ignore),
                "equal_to_next_token": _agreement(y[:, : ids.shape[1] - 1], ids[:, 1 : 1 + y.shape[1]], ignore),
            },
            fix="shift once: either the data gives y = seq[1:] and the loss compares logits with y as they are, or "
            "the loss compares logits[:, :-1] with ids[:, 1:]",
        )

    def _visible_trained(self, probe: Probe, ids: torch.Tensor, labels: torch.Tensor) -> None:
        """A masked LM's labels: the trained positions (not -100) should be the ones hidden from the model (masked
        or replaced, a tenth of them kept as they were). When most trained labels equal the visible input token at
        their position while some inputs were hidden, the loss mostly trains copying what the model sees."""
        from expkit.finetune.labels import IGNORE

        trained = labels != IGNORE
        n = int(trained.sum())
        if n < MIN_TRAINED:
            return
        visible = float((labels == ids)[trained].float().mean())
        hidden = int(((labels != ids) & trained).sum())
        if visible < VISIBLE_SHARE or hidden == 0:
            return
        probe.report(
            kind="bug",
            check="masked_lm_trains_visible_tokens",
            message=f"{visible:.0%} of the {n} trained labels of the masked LM equal the token the model sees at "
            "their position: the labels were not set to -100 outside the masked positions, so the loss is mostly "
            "the trivial copy of visible tokens and the few masked ones hardly train",
            evidence={"trained_labels": n, "equal_to_visible_input": visible, "hidden_and_trained": hidden},
            fix="labels = ids.masked_fill(~masked, -100): train only the positions that were masked "
            "(DataCollatorForLanguageModeling does this)",
            where=self._labels_made(),
        )

    def _judge(self, probe: Probe, b: _Batch, *, hf: bool) -> None:
        trained = b.labels != b.ignore
        if hf:  # the model's loss shifts: the first label of each row is never a target
            trained[:, 0] = False
        total, n_trained = int(trained[:, int(hf) :].numel()), int(trained.sum())
        where = "the `labels` given to the model" if hf else "the cross_entropy target"
        if n_trained == 0:
            probe.report(
                kind="bug",
                check="no_trained_label",
                message=f"every one of the {total} label positions in {where} is {b.ignore}: nothing is trained "
                "(the loss is NaN or 0 and no gradient reaches the model)",
                evidence={"label_positions": total, "trained_positions": 0, "ignore_index": b.ignore},
                fix="mask only the prompt and the padding; keep the answer's tokens (and its stop token) in the labels",
            )
            return
        if hf and self._shifted_twice(probe, b, trained):
            return  # the labels are misaligned: the pad and stop rules would misread them
        self._pad_counted(probe, b, trained, where, total, hf)
        self._stop_masked(probe, b, where)

    def _shifted_twice(self, probe: Probe, b: _Batch, trained: torch.Tensor) -> bool:
        head = trained[:, :-1]
        n = int(head.sum())
        if n < MIN_TRAINED:
            return False
        next_agree = float((b.labels[:, :-1] == b.ids[:, 1:])[head].float().mean())
        same_agree = float((b.labels == b.ids)[trained].float().mean())
        if next_agree < SHIFTED_AGREEMENT or same_agree > 0.5:
            return False
        where = self._labels_made()
        probe.report(
            kind="bug",
            check="labels_shifted_twice",
            message=f"{next_agree:.0%} of the {n} trained labels equal the next input token, and the model shifts "
            "labels itself: the loss trains token t to predict token t + 2",
            evidence={"trained_labels": n, "equal_to_next_token": next_agree, "equal_to_same_token": same_agree},
            fix="pass labels=input_ids (with -100 where masked): a Hugging Face causal LM shifts them by one itself",
            where=where,
        )
        return True

    def _labels_made(self) -> tuple[str, int] | None:
        """Where the labels being judged were made: recorded in a collator, else the last assignment of the name
        passed as ``labels=`` at the model's call; None when neither is known (or the labels are the ids)."""
        recorded = self.made.line_of(self.labels) if self.made is not None else None
        if recorded is not None and self.made is not None and recorded == self.made.line_of(self.ids, exact=True):
            recorded = None  # the labels are the ids themselves: no line of their own
        call = user_frame(4)
        made = argument_made_at(call[0], call[1], "labels")
        return recorded or ((call[0], made) if call[0] is not None and made is not None else None)

    def _pad_counted(self, probe: Probe, b: _Batch, trained: torch.Tensor, where: str, total: int, hf: bool) -> None:
        pad = _padding(b)
        counted = int((pad & trained).sum())
        if counted == 0:
            return
        # the line that made the labels tensor, before the writes that put each row's tokens in: the pad values
        # are the ones no write replaced
        made = self.made.line_of(self.labels, born=True) if self.made is not None else None
        if made is not None and self.made is not None and made == self.made.line_of(self.ids, exact=True):
            made = None  # the labels are the ids themselves: no line of their own
        file, line = user_frame() if hf else (None, None)
        named = argument_made_at(file, line, "labels") if file is not None else None
        if file is not None and line is not None and named is not None and named < line:
            # labels=labels at the model's call, the name assigned before it: the line that chose them (labels =
            # tgt), where the pad ids are to be replaced, rather than the line that built the tensor. A name bound
            # by the loop (for ids, mask, labels in loader) is no such choice: the collator's line stays
            made = (file, named)
        if made is None and not hf and probe.loss_module is not None:  # nn.CrossEntropyLoss() built without the
            built = probe.built_at(probe.loss_module)  # pad's ignore_index: where it belongs
            made = (built[0], built[1]) if built[0] is not None and built[1] is not None else None
        probe.report(
            kind="bug",
            check="pad_in_loss",
            message=f"{counted} of {total} label positions in {where} are padding and are trained: the model "
            "learns to predict pad tokens and the loss is averaged over them",
            evidence={
                "pad_positions_trained": counted,
                "pad_positions": int(pad.sum()),
                "label_positions": total,
                "trained_positions": int(trained.sum()),
                "pad_token_id": b.pad_id,
                "from_attention_mask": b.attended is not None,
            },
            fix="set labels to -100 where attention_mask == 0 (not where input_ids == pad_token_id when pad is "
            "also the eos)",
            where=made,
        )

    def _stop_masked(self, probe: Probe, b: _Batch, where: str) -> None:
        if not b.stops:
            return
        rows, eos_only, spans = _masked_stops(b)
        if rows == 0:
            return
        pad_is_stop = b.pad_id is not None and b.pad_id in b.stops
        why = f" (pad_token_id {b.pad_id} is the stop token: masking pad ids masks every stop)" if pad_is_stop else ""
        answer = rows - eos_only
        stop_only = eos_only >= answer
        what = (
            "the stop token right after the trained tokens is masked: the model is never taught to stop"
            if stop_only
            else "the end of each sequence (the answer and its stop token) is masked while earlier tokens are "
            "trained: the mask is inverted, the model learns the prompt"
        )
        made = None
        if stop_only:  # the line that made the pad the stop token (tok.pad_token = tok.eos_token), when found
            file = user_frame()[0]
            line = assigned_from(file, "pad", "eos")
            made = (file, line) if file is not None and line is not None else None
        made = made or self._labels_made()
        probe.report(
            kind="bug",
            check="eos_masked" if stop_only else "answer_masked",
            message=f"in {rows} of {spans} rows of {where}, {what}{why}",
            evidence={
                "rows_with_masked_stop": rows,
                "rows_only_stop_masked": eos_only,
                "rows_trained": spans,
                "stop_token_ids": list(b.stops),
                "pad_token_id": b.pad_id,
            },
            fix="mask the prompt and the padding only (labels = -100 where attention_mask == 0), and keep the "
            "answer and its stop token in the labels",
            where=made,
        )
