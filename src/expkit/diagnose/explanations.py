"""Explain the PyTorch errors people hit most: shapes, devices, dtypes, out of memory, autograd, workers.

Each rule reads the exception message (and the frames, to name the module and the phase) and returns
what happened, the numbers it pulled out, and what to try.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING

from expkit.diagnose.collective import NcclTimeout
from expkit.diagnose.oom import OomInfo, parse_oom_message
from expkit.diagnose.tracebacks import ExceptionRecord, Frame, Traceback, parse_traceback

if TYPE_CHECKING:
    from expkit.diagnose.diagnosis import Diagnosis

__all__ = ["Explanation", "explain", "explain_exception"]

# torch/nn/modules/<file>.py -> the layer family it holds
_LAYER_FILES = {
    "linear": "nn.Linear",
    "conv": "nn.Conv",
    "sparse": "nn.Embedding",
    "normalization": "nn.LayerNorm",
    "batchnorm": "nn.BatchNorm",
    "activation": "an activation/attention layer",
    "loss": "a loss module",
    "rnn": "nn.RNN/LSTM/GRU",
    "transformer": "nn.Transformer",
    "container": "nn.Sequential",
}


@dataclass(frozen=True)
class Explanation:
    """What went wrong, in words, with what was pulled out of the message.

    Attributes:
        kind: shape_mismatch, device_mismatch, dtype_mismatch, out_of_memory, no_grad, inplace_modified,
            worker_pickling, backward_twice, index_out_of_range, collate_size_mismatch, trainer_no_loss,
            trainer_no_columns, nccl_timeout, or unknown.
        title: one line.
        summary: a few sentences: what happened and where.
        fixes: things to try, most likely first.
        exception_type / message: the exception explained (in a chain, the one a rule matched).
        frame: where to look (the last frame in your own files).
        module: the module named from the frames (``self.fc2 -> nn.Linear``) or None.
        shapes: shapes pulled out of the message, e.g. ((4, 10), (20, 5)).
        devices / dtypes: devices or dtypes named by the message.
        oom: the parsed out-of-memory numbers and phase, for out_of_memory.
        trainer: where in the Hugging Face Trainer it was raised (``training_step -> compute_loss:
            the forward/backward of a batch``), None outside a Trainer.
        nccl: every rank's watchdog report, for nccl_timeout.
    """

    kind: str
    title: str
    summary: str
    fixes: tuple[str, ...]
    exception_type: str | None
    message: str
    frame: Frame | None
    module: str | None = None
    shapes: tuple[tuple[int, ...], ...] = ()
    devices: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    oom: OomInfo | None = None
    trainer: str | None = None
    nccl: NcclTimeout | None = None


@dataclass(frozen=True)
class _Hit:
    kind: str
    title: str
    summary: str
    fixes: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...] = ()
    devices: tuple[str, ...] = ()
    dtypes: tuple[str, ...] = ()
    oom: OomInfo | None = None


def _dims(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"-?\d+", text))


def _gib(n: int | None) -> str:
    """Bytes in PyTorch's units: GiB from 1 GiB up, MiB below."""
    if n is None:
        return "?"
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.2f} MiB"


_SHAPE_FIXES = (
    "print x.shape right before the call named above, and compare with the layer's size "
    "(nn.Linear(in_features, out_features) wants input (..., in_features))",
    "check reshapes/flatten before this layer: a wrong view is the usual cause",
)


def _matmul_hit(m: re.Match[str]) -> _Hit:
    a, b, c, d = map(int, m.groups())
    return _Hit(
        "shape_mismatch",
        f"matmul shape mismatch: ({a}x{b}) @ ({c}x{d})",
        f"A ({a} x {b}) input met a ({c} x {d}) matrix: the inner sizes {b} and {c} differ. In an "
        f"nn.Linear, mat2 is the weight transposed, so the layer expects {c} input features and got {b}.",
        _SHAPE_FIXES,
        shapes=((a, b), (c, d)),
    )


def _broadcast_hit(m: re.Match[str]) -> _Hit:
    a, b, dim = map(int, m.groups())
    return _Hit(
        "shape_mismatch",
        f"broadcast mismatch at dimension {dim}: {a} vs {b}",
        f"An elementwise op got sizes {a} and {b} at dimension {dim}; broadcasting needs them equal or one of them 1.",
        _SHAPE_FIXES,
        shapes=((a,), (b,)),
    )


def _view_hit(m: re.Match[str]) -> _Hit:
    return _Hit(
        "shape_mismatch",
        "view/reshape to an impossible shape",
        f"view/reshape to [{m.group(1)}] needs a size that divides {m.group(2)} elements.",
        _SHAPE_FIXES,
        shapes=(_dims(m.group(1)), (int(m.group(2)),)),
    )


def _loss_batch_hit(m: re.Match[str]) -> _Hit:
    a, b = map(int, m.groups())
    return _Hit(
        "shape_mismatch",
        f"loss: input batch {a} vs target batch {b}",
        f"The loss got {a} predictions but {b} targets. For token-level losses, flatten both: "
        "logits.view(-1, vocab) and labels.view(-1).",
        _SHAPE_FIXES,
        shapes=((a,), (b,)),
    )


def _conv_channels_hit(m: re.Match[str]) -> _Hit:
    return _Hit(
        "shape_mismatch",
        f"conv channels: expected {m.group(3)}, got {m.group(4)}",
        f"A convolution with weight [{m.group(1)}] got input [{m.group(2)}].",
        _SHAPE_FIXES,
        shapes=(_dims(m.group(1)), _dims(m.group(2))),
    )


def _checkpoint_hit(m: re.Match[str]) -> _Hit:
    return _Hit(
        "shape_mismatch",
        f"checkpoint does not fit the model: {m.group(1)}",
        f"The checkpoint's {m.group(1)} is [{m.group(2)}] but the model's is [{m.group(3)}]: the model "
        "was built with a different config than the one that saved the checkpoint.",
        ("build the model from the checkpoint's own config.json",),
        shapes=(_dims(m.group(2)), _dims(m.group(3))),
    )


# PyTorch's shape messages, most specific first, each with the explanation built from its numbers
_SHAPE_MESSAGES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], _Hit]], ...] = (
    (re.compile(r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)"), _matmul_hit),
    (
        re.compile(
            r"size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) at non-singleton "
            r"dimension (\d+)"
        ),
        _broadcast_hit,
    ),
    (re.compile(r"shape '\[([-\d, ]+)\]' is invalid for input of size (\d+)"), _view_hit),
    (re.compile(r"Expected input batch_size \((\d+)\) to match target batch_size \((\d+)\)"), _loss_batch_hit),
    (
        re.compile(
            r"weight of size \[([-\d, ]+)\], expected input\[([-\d, ]+)\] to have (\d+) channels, "
            r"but got (\d+) channels"
        ),
        _conv_channels_hit,
    ),
    (
        re.compile(
            r"size mismatch for ([\w.]+): copying a param with shape torch\.Size\(\[([-\d, ]*)\]\) from "
            r"checkpoint, the shape in current model is torch\.Size\(\[([-\d, ]*)\]\)"
        ),
        _checkpoint_hit,
    ),
)


def _shape_rule(msg: str, rec: ExceptionRecord) -> _Hit | None:
    for pattern, hit in _SHAPE_MESSAGES:
        m = pattern.search(msg)
        if m:
            return hit(m)
    if re.search(r"size mismatch|must match mat2|shapes cannot be|Expected size for first two dimensions", msg):
        return _Hit("shape_mismatch", "shape mismatch", "Two tensors' shapes do not fit the operation.", _SHAPE_FIXES)
    return None


def _device_rule(msg: str, rec: ExceptionRecord) -> _Hit | None:
    fixes = (
        "move the model and every input to one device: model.to(device); batch = {k: v.to(device) ...}",
        "tensors created inside forward need device=x.device (torch.zeros(..., device=x.device))",
    )
    m = re.search(r"is on (\S+), different from other tensors on (\S+?)[ (]", msg) or re.search(
        r"Tensor on device (\S+) is not on the expected device (\S+?)!", msg
    )
    if m:
        return _Hit(
            "device_mismatch",
            f"tensors on different devices: {m.group(1)} and {m.group(2)}",
            "One operation got tensors on different devices.",
            fixes,
            devices=(m.group(1), m.group(2)),
        )
    m = re.search(r"found at least two devices, (\S+?) and (\S+?)[!.]", msg)
    if m or "Expected all tensors to be on the same device" in msg:
        devs = (m.group(1), m.group(2)) if m else ()
        return _Hit(
            "device_mismatch",
            "tensors on different devices" + (f": {devs[0]} and {devs[1]}" if devs else ""),
            "One operation got tensors on different devices; PyTorch never moves them for you.",
            fixes,
            devices=devs,
        )
    m = re.search(
        r"Input type \((torch\.(?:cuda\.)?\w+)\) and weight type \((torch\.(?:cuda\.)?\w+)\) "
        r"should be the same",
        msg,
    )
    if m and ("cuda" in m.group(1)) != ("cuda" in m.group(2)):
        return _Hit(
            "device_mismatch",
            f"input {m.group(1)} vs weight {m.group(2)}",
            "The input and the layer's weight live on different devices.",
            fixes,
            devices=tuple("cuda" if "cuda" in g else "cpu" for g in m.groups()),
        )
    return None


def _dtype_rule(msg: str, rec: ExceptionRecord) -> _Hit | None:
    fixes = (
        "cast one side: x.to(model.dtype), or model.to(torch.float32)",
        "under mixed precision, run the op inside torch.autocast(device_type=..., dtype=...) instead of "
        "casting by hand",
    )
    patterns = (
        r"must have the same dtype, but got (\w+) and (\w+)",
        r"expected scalar type (\w+) but found (\w+)",
        r"same dtype, but got: (\w+) != ([\w:]+)",
        r"Expected object of scalar type (\w+) but got scalar type (\w+)",
        r"Input type \((\w+)\) and (?:bias|weight) type \((\w+)\) should be the same",
        r"Input type \((torch\.(?:cuda\.)?\w+)\) and weight type \((torch\.(?:cuda\.)?\w+)\) "
        r"should be the same",
    )
    for pat in patterns:
        m = re.search(pat, msg)
        if m:
            return _Hit(
                "dtype_mismatch",
                f"dtype mismatch: {m.group(1)} vs {m.group(2)}",
                "One operation got tensors of different dtypes; PyTorch does not promote inside matmul/conv "
                "(outside autocast).",
                fixes,
                dtypes=(m.group(1), m.group(2)),
            )
    m = re.search(r"\"(\w+)\" not implemented for '(\w+)'", msg)
    if m:
        return _Hit(
            "dtype_mismatch",
            f"{m.group(1)} has no kernel for {m.group(2)}",
            f"The op {m.group(1)} is not implemented for dtype {m.group(2)} on this device (e.g. Half matmul on CPU).",
            fixes,
            dtypes=(m.group(2),),
        )
    m = re.search(
        r"Expected tensor for argument #\d+ '(\w+)' to have one of the following scalar types: ([\w, ]+); "
        r"but got (\S+) instead",
        msg,
    )
    if m:
        return _Hit(
            "dtype_mismatch",
            f"{m.group(1)} must be {m.group(2)}, got {m.group(3)}",
            "Token ids / indices must be integers (torch.long).",
            ("ids = ids.long()",),
            dtypes=(m.group(3),),
        )
    return None


_PHASE_ADVICE = {
    "loading": (
        "the weights alone do not fit (C4.6: an OOM right after load is the weights)",
        (
            "load in bf16/fp16 (torch_dtype=torch.bfloat16)",
            "shard across devices (device_map='auto', FSDP)",
            "quantize (4/8-bit)",
            "check with expkit mem what the weights need",
        ),
    ),
    "forward": (
        "activations of this batch do not fit",
        (
            "lower the micro-batch size or sequence length, keep the global batch with gradient accumulation",
            "gradient checkpointing",
            "wrap evaluation in torch.no_grad()",
        ),
    ),
    "backward": (
        "activations saved for backward plus the gradients do not fit (C4.6: after the first backward "
        "it is gradients + optimizer state; still OOM with LoRA means activations)",
        ("gradient checkpointing", "a smaller micro-batch with gradient accumulation", "LoRA to drop full gradients"),
    ),
    "optimizer step": (
        "the optimizer state is allocated at the first step (AdamW: two fp32 moments, 8 bytes per "
        "trained parameter) (C4.6)",
        ("LoRA (train far fewer parameters)", "an 8-bit or paged optimizer", "shard optimizer state (ZeRO / FSDP)"),
    ),
    "generate": (
        "the KV cache grows with batch x (prompt + new tokens)",
        ("lower the batch size or max_new_tokens", "a static/quantized cache"),
    ),
}


def _oom_rule(msg: str, rec: ExceptionRecord) -> _Hit | None:
    info = parse_oom_message(msg, rec.frames)
    if info is None:
        return None
    where, fixes = _PHASE_ADVICE.get(
        info.phase or "", ("the phase is unknown: " + info.phase_reason, ("measure with expkit mem",))
    )
    parts = [f"{info.device} ran out of memory asking for {_gib(info.requested_bytes)}"]
    if info.capacity_bytes is not None:
        parts.append(
            f"of {_gib(info.capacity_bytes)} total, {_gib(info.free_bytes)} free, "
            f"{_gib(info.reserved_bytes)} reserved by PyTorch ({_gib(info.allocated_bytes)} in tensors)"
        )
    summary = "; ".join(parts) + f". Phase: {info.phase or 'unknown'} ({info.phase_reason}): {where}."
    frag = info.reserved_unallocated_bytes
    # cached-but-free blocks larger than the request: enough memory in total, but fragmented
    if frag is not None and info.requested_bytes is not None and frag >= info.requested_bytes:
        fixes = (*fixes, "much memory is reserved but unallocated: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
    return _Hit("out_of_memory", f"out of memory during {info.phase or 'an unknown phase'}", summary, fixes, oom=info)


def _autograd_rule(msg: str, rec: ExceptionRecord) -> _Hit | None:
    if "does not require grad and does not have a grad_fn" in msg:
        return _Hit(
            "no_grad",
            "backward on a tensor with no graph",
            "The loss was computed without a graph: under torch.no_grad()/inference_mode, from detached "
            "tensors (.detach(), .item(), numpy), or with every parameter frozen (requires_grad=False).",
            (
                "check torch.is_grad_enabled() where the loss is computed",
                "check that some parameter has requires_grad=True (after freezing for LoRA, the adapters "
                "must be trainable)",
            ),
        )
    m = re.search(
        r"modified by an inplace operation: \[(.+?)\], which is output (\d+) of (\w+), is at version (\d+); "
        r"expected version (\d+)",
        msg,
    )
    if m:
        return _Hit(
            "inplace_modified",
            f"a tensor saved for backward was changed in place ({m.group(3)})",
            f"The output {m.group(2)} of {m.group(3)} ({m.group(1)}) was saved for backward and then modified "
            f"in place (version {m.group(5)} -> {m.group(4)}).",
            (
                "replace the in-place op (x += y, x.relu_(), nn.ReLU(inplace=True), x[i] = ...) after that "
                "op with an out-of-place one",
                "torch.autograd.set_detect_anomaly(True) names the forward op",
            ),
            shapes=(_dims(m.group(1)),),
        )
    if "modified by an inplace operation" in msg:
        return _Hit(
            "inplace_modified",
            "a tensor saved for backward was changed in place",
            "A tensor needed for the gradient was modified in place after it was saved.",
            ("use out-of-place ops", "torch.autograd.set_detect_anomaly(True) names the forward op"),
        )
    if "backward through the graph a second time" in msg:
        return _Hit(
            "backward_twice",
            "backward through the same graph twice",
            "The graph is freed after backward; a second backward over it (or a tensor carried over from the "
            "previous step, e.g. an RNN hidden state) fails.",
            ("detach state carried between steps (h = h.detach())", "retain_graph=True only if you mean it"),
        )
    if "index out of range in self" in msg or "device-side assert triggered" in msg:
        return _Hit(
            "index_out_of_range",
            "an index outside the table",
            "An index is out of range: typically a token id >= the embedding's vocabulary size, or a label "
            "outside [0, num_classes) (on CUDA this shows as a device-side assert).",
            (
                "check ids.max() < embedding.num_embeddings and the tokenizer matches the model",
                "run on CPU or with CUDA_LAUNCH_BLOCKING=1 for the exact line",
            ),
        )
    return None


def _pickling_rule(msg: str, rec: ExceptionRecord) -> _Hit | None:
    m = re.search(
        r"Can't (?:pickle|get) (?:local object|attribute) '([^']+)'|Can't pickle <function ([^ >]+)"
        r"|cannot pickle '(\w+)' object|PicklingError",
        msg + " " + rec.type,
    )
    if not m:
        return None
    obj = next((g for g in m.groups() if g), "an object")
    in_loader = any("torch/utils/data" in f.file.replace("\\", "/") for f in rec.frames)
    who = "DataLoader workers" if in_loader else "worker processes"
    return _Hit(
        "worker_pickling",
        f"{who} cannot receive {obj}",
        f"{who.capitalize()} get the dataset, collate_fn and functions by pickling (always under the "
        f"'spawn' start method: macOS, Windows, CUDA). {obj} cannot be pickled: lambdas, functions "
        "defined inside other functions, open files, locks and generators cannot (C1.3).",
        (
            "move the function/class to module top level (not inside main() or a notebook cell)",
            "guard the entry point with if __name__ == '__main__':",
            "open files/handles lazily inside the worker (worker_init_fn or first __getitem__)",
        ),
    )


def _collate_rule(msg: str, rec: ExceptionRecord) -> _Hit | None:
    fixes = (
        "pad each batch to its longest example: transformers' DataCollatorWithPadding(tokenizer) "
        "(DataCollatorForSeq2Seq also pads labels, with -100), or a collate_fn using "
        "torch.nn.utils.rnn.pad_sequence(batch_first=True)",
        "or tokenize to one length: tokenizer(..., padding='max_length', max_length=N, truncation=True); check "
        "max_length against your longest examples (longer ones are cut)",
        "with the Trainer: pass data_collator=DataCollatorWithPadding(tokenizer); without a tokenizer the "
        "default collator only stacks, it does not pad",
    )
    m = re.search(
        r"stack expects each tensor to be equal size, but got \[([-\d, ]*)\] at entry (\d+) and "
        r"\[([-\d, ]*)\] at entry (\d+)",
        msg,
    )
    if m:
        a, b = _dims(m.group(1)), _dims(m.group(3))
        return _Hit(
            "collate_size_mismatch",
            f"examples of different lengths in one batch: {list(a)} vs {list(b)}",
            f"The batch is built with torch.stack, which needs equal shapes, but example {m.group(2)} "
            f"has shape {list(a)} and example {m.group(4)} {list(b)}: the examples were tokenized to "
            "different lengths and nothing padded them.",
            fixes,
            shapes=(a, b),
        )
    m = re.search(r"expected sequence of length (\d+) at dim (\d+) \(got (\d+)\)", msg)
    if m:
        la, dim, lb = map(int, m.groups())
        return _Hit(
            "collate_size_mismatch",
            f"ragged lists into one tensor: length {la} vs {lb} at dim {dim}",
            f"torch.tensor() got lists of different lengths ({la} and {lb} at dimension {dim}): the examples "
            "were not padded to one length.",
            fixes,
            shapes=((la,), (lb,)),
        )
    if "Unable to create tensor, you should probably activate truncation and/or padding" in msg:
        return _Hit(
            "collate_size_mismatch",
            "the tokenizer cannot make one tensor of different lengths",
            "return_tensors='pt' on examples of different lengths needs padding (and truncation for long "
            "ones); the collator or tokenizer call did not pad.",
            fixes,
        )
    return None


def _cat_rule(msg: str, rec: ExceptionRecord) -> _Hit | None:
    """torch.cat / torch.stack of tensors whose other dimensions differ (a custom collate_fn, a KV cache, a
    concatenation of features)."""
    m = re.search(
        r"Sizes of tensors must match except in dimension (-?\d+)\. Expected size (\d+) but got size "
        r"(\d+) for tensor number (\d+) in the list",
        msg,
    )
    if not m:
        return None
    dim, want, got, idx = m.groups()
    return _Hit(
        "cat_size_mismatch",
        f"torch.cat along dim {dim}: tensor {idx} is {got} where {want} was expected",
        f"torch.cat joins tensors along dimension {dim}, so every other dimension must agree; tensor number "
        f"{idx} in the list has size {got} in one of them where the first has {want}.",
        (
            f"print [t.shape for t in tensors] right before the cat; every size except dim {dim} must match",
            "examples of different lengths in a custom collate_fn: pad them first "
            "(torch.nn.utils.rnn.pad_sequence(batch_first=True)) or concatenate along the length dimension",
            "check that the dim argument is the one meant: dim=0 joins along the batch",
        ),
    )


def _trainer_rule(msg: str, rec: ExceptionRecord) -> _Hit | None:
    m = re.search(
        r"The model did not return a loss from the inputs, only the following keys: ([^.]*)\. For "
        r"reference, the inputs it received are ([^.]*)\.",
        msg,
    )
    if m:
        return _Hit(
            "trainer_no_loss",
            "the model returned no loss: the batch has no labels",
            f"Trainer.compute_loss needs outputs['loss'], which a model computes only when the batch holds "
            f"labels. The model returned {m.group(1).strip()}; the batch held {m.group(2).strip()}.",
            (
                "causal LM: DataCollatorForLanguageModeling(tokenizer, mlm=False) copies input_ids into labels",
                "keep the label column: name it 'labels' (or set label_names=[...] in TrainingArguments); "
                "remove_unused_columns=True drops columns the model's forward does not take",
                "or override compute_loss when the loss is your own",
            ),
        )
    if "No columns in the dataset match the model's forward method signature" in msg:
        return _Hit(
            "trainer_no_columns",
            "the Trainer dropped every dataset column",
            "remove_unused_columns=True keeps only columns named like the model's forward arguments "
            "(input_ids, attention_mask, labels ...); none matched, so the dataset is still untokenized or "
            "its columns are named differently.",
            (
                "tokenize the dataset (dataset.map(tokenize, batched=True)) before passing it",
                "rename columns to the forward's argument names, or set remove_unused_columns=False with a "
                "collator that builds the inputs",
            ),
        )
    return None


_RULES: tuple[Callable[[str, ExceptionRecord], _Hit | None], ...] = (
    _oom_rule,
    _device_rule,
    _dtype_rule,
    _collate_rule,
    _cat_rule,
    _shape_rule,
    _autograd_rule,
    _pickling_rule,
    _trainer_rule,
)

# Trainer methods (transformers/trainer.py) -> what the Trainer was doing there
_TRAINER_PHASES = (
    ("compute_loss", "computing the loss of a batch"),
    ("training_step", "the forward/backward of a batch"),
    ("prediction_step", "evaluation (a prediction step)"),
    ("evaluation_loop", "evaluation"),
    ("evaluate", "evaluation"),
    ("_save_checkpoint", "saving a checkpoint"),
    ("save_model", "saving the model"),
    ("get_train_dataloader", "building the training DataLoader"),
    ("get_eval_dataloader", "building the evaluation DataLoader"),
    ("get_batch_samples", "fetching a batch"),
    ("_run_epoch", "the training loop"),
    ("_inner_training_loop", "the training loop"),
    ("train", "starting training"),
)


def _trainer_context(frames: tuple[Frame, ...]) -> str | None:
    """``training_step -> compute_loss: computing the loss of a batch`` for a Hugging Face Trainer
    traceback (frames in transformers/trainer.py), else None. A batch that fails inside the DataLoader
    or collator below the training loop is named as such."""
    idx = [i for i, f in enumerate(frames) if f.file.replace("\\", "/").endswith("transformers/trainer.py")]
    if not idx:
        return None
    chain = [frames[i].function or "?" for i in idx]
    deepest = chain[-1]
    below = [f.file.replace("\\", "/") for f in frames[idx[-1] + 1 :]]
    if any("torch/utils/data/" in b or "data_collator" in b or "accelerate/data_loader" in b for b in below):
        what = "fetching a batch (DataLoader and data collator)"
    else:
        what = next((w for name, w in _TRAINER_PHASES if name == deepest), f"Trainer.{deepest}")
    return f"{' -> '.join(dict.fromkeys(chain))}: {what}"


def _module_from_frames(frames: tuple[Frame, ...], chosen: Frame | None) -> str | None:
    """``self.fc2 -> nn.Linear``: the attribute called in your last frame and the layer file it ended in."""
    attr = None
    if chosen is not None and chosen.code:
        m = re.search(r"(self(?:\.\w+)+)\s*\(", chosen.code)
        attr = m.group(1) if m else None
        idx = next((i for i, f in enumerate(frames) if f is chosen), None)
        into_module = (
            idx is not None
            and idx + 1 < len(frames)
            and frames[idx + 1].function in ("_wrapped_call_impl", "_call_impl")
        )
        if attr is None and into_module:  # `out = model(x)`: the callee is a module held in a variable
            names = [
                n
                for n in re.findall(r"([A-Za-z_][\w.]*)\s*\(", chosen.code)
                if not n.startswith(("torch.", "F.", "nn.")) and not hasattr(builtins, n)
            ]
            attr = names[0] if names else None
    layer = None
    for f in reversed(frames):
        path = f.file.replace("\\", "/")
        if "torch/nn/modules/" in path and f.function == "forward":
            stem = PurePath(path).stem
            layer = _LAYER_FILES.get(stem, f"torch/nn/modules/{stem}.py")
            break
    if attr and layer:
        return f"{attr} -> {layer}"
    return attr or layer


def explain(tb: Traceback | str) -> Explanation:
    """Explain a parsed traceback (or traceback text).

    The exceptions are tried from the one holding the chosen frame outwards; the first that a rule
    recognizes is explained. With no rule matching, ``kind`` is ``unknown`` and the summary points at
    the chosen frame.

    Example:
        >>> e = explain('Traceback (most recent call last):\\n  File "/me/m.py", line 9, in forward\\n'
        ...             '    return self.fc(x)\\n'
        ...             'RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x10 and 20x5)\\n')
        >>> e.kind, e.shapes, e.module
        ('shape_mismatch', ((4, 10), (20, 5)), 'self.fc')
    """
    if isinstance(tb, str):
        tb = parse_traceback(tb)
    order = list(range(len(tb.exceptions) - 1, -1, -1))
    if tb.chosen_index is not None:
        order.remove(tb.chosen_index)
        order.insert(0, tb.chosen_index)
    for i in order:
        rec = tb.exceptions[i]
        text = f"{rec.message}"
        for rule in _RULES:
            hit = rule(text, rec)
            if hit is None:
                continue
            yours = [f for f in rec.frames if f.kind == "yours"]
            frame = yours[-1] if yours else tb.chosen_frame
            module = _module_from_frames(rec.frames, frame)
            trainer = _trainer_context(rec.frames)
            return Explanation(
                kind=hit.kind,
                title=hit.title,
                summary=hit.summary,
                fixes=hit.fixes,
                exception_type=rec.type,
                message=rec.message,
                frame=frame,
                module=module,
                shapes=hit.shapes,
                devices=hit.devices,
                dtypes=hit.dtypes,
                oom=hit.oom,
                trainer=trainer,
            )
    final = tb.final
    frame = tb.chosen_frame
    where = f"{frame.file}:{frame.line} in {frame.function}" if frame else "no frame of yours"
    trainer = _trainer_context(final.frames) if final else None
    return Explanation(
        kind="unknown",
        title=f"{final.type}" if final else "no exception found",
        summary=f"No known PyTorch pattern; start reading at {where}."
        if final
        else "The text holds no traceback expkit could read.",
        fixes=(),
        exception_type=final.type if final else None,
        message=final.message if final else "",
        frame=frame,
        module=_module_from_frames(final.frames, frame) if final else None,
        trainer=trainer,
    )


def explain_exception(exc: BaseException) -> Diagnosis:
    """Parse and explain a live exception (its formatted traceback, so live and pasted text agree)."""
    import traceback as _tb

    from expkit.diagnose.diagnosis import Diagnosis

    tb = parse_traceback("".join(_tb.format_exception(type(exc), exc, exc.__traceback__)))
    return Diagnosis(traceback=tb, explanation=explain(tb))
