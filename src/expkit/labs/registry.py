"""Find labs: every module ``expkit/labs/lab_*.py`` registers its labs with ``@lab(...)``.

Lab modules import only light things at module level (heavy imports go inside ``run``), so
``expkit labs list`` stays fast.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Callable, Sequence

from expkit.errors import UsageError
from expkit.labs.base import Lab, LabContext, LabOutput, RuleChange, SeedFigure

__all__ = ["CLAIMS", "all_labs", "claim_text", "lab", "select_labs"]

_REGISTRY: dict[str, Lab] = {}

# The seed's claims in English, by ID (the project's CLAIMS.md renders the seed document, chapter by chapter):
# what a lab's ``claims`` refer to, and the claim column of docs/claims.md.
CLAIMS: dict[str, str] = {
    "C1.1": (
        "Reading a JSONL file into a list multiplies memory; a generator pipeline keeps peak memory flat, "
        "independent of file size"
    ),
    "C1.2": "CPU-bound preprocessing: threads do not run in parallel (GIL); a process pool does",
    "C1.3": (
        "Process-pool rules: the function given to `Pool.map` must live at module top level; globals are "
        "*copies* in the children. DataLoader workers, `datasets.map(num_proc=8)` and DDP ranks follow the "
        "same rules"
    ),
    "C1.4": "Reading a traceback: read bottom-up, skip `_call_impl`, find the last frame in *your own* file",
    "C1.5": (
        "The handful of syntax forms that recur in training code are each a Python protocol "
        "(`__getitem__`/`__len__`, `__iter__`/`__next__`, `__call__`, context managers, decorators); PyTorch "
        "is built on them"
    ),
    "C2.1": (
        '"Along which dimension" is one concept: the axis. Broadcasting is permissive, so shape bugs often '
        "raise no error: `(3,) + (3, 1)` silently becomes `(3, 3)`. Assert shapes at key points"
    ),
    "C2.2": "An eval table carries `ci95 = 1.96 * sqrt(p(1-p)/n)`",
    "C2.3": (
        "Loss curves: logarithmic x axis, multi-seed shaded bands; a difference counts only where bands do not overlap"
    ),
    "C2.4": "Verify a handwritten operator against the reference implementation to floating-point precision",
    "C3.1": (
        "The usage layer is five objects (Dataset, DataLoader, nn.Module, loss, Optimizer) plus Autograd "
        "(records the graph, accumulates gradients, `no_grad`). The 20-line loop maps one line to one "
        "concept; a Trainer is that loop plus a shell"
    ),
    "C3.2": (
        "Gradients accumulate: not calling `zero_grad` is either a bug or gradient accumulation (small "
        "batches simulating a large one)"
    ),
    "C3.3": (
        "Evaluating without `no_grad` keeps intermediates alive for a backward that never comes; memory grows until OOM"
    ),
    "C3.4": "The first-step loss should be about ln V",
    "C3.5": "One minute of training moves perplexity a long way",
    "C3.6": (
        "Learning-rate schedule: warmup + cosine; loss computed in fp32; `clip_grad_norm_(..., 1.0)`; "
        "`ignore_index=-100`; `zero_grad(set_to_none=True)`"
    ),
    "C3.7": (
        "`loss.item()` is slow on a GPU: the CPU launches kernels asynchronously and `.item()` waits for the "
        "queue to drain; do not call it every step"
    ),
    "C3.8": "bf16 autocast on a CPU is slow: the gain of lower precision comes from hardware",
    "C4.1": (
        "Every trainable parameter costs 16 bytes in mixed-precision AdamW training (fp32 master 4 + grad + "
        "Adam m 4 + v 4, with the bf16 copy)"
    ),
    "C4.2": (
        "Activations are a separate block, independent of parameter count; gradient checkpointing trades "
        "compute for activation memory"
    ),
    "C4.3": "FSDP over 8 GPUs shards the training state",
    "C4.4": '"Full fine-tune or LoRA" is first decided by how many GPUs you have',
    "C4.5": (
        "autocast does not turn the parameters into bf16: it halves matmul intermediates; the training state "
        "stays 16 B/param"
    ),
    "C4.6": (
        "Attribute an OOM by when it happens: right after load -> weights; after the first backward -> "
        "gradients + optimizer state; still OOM with LoRA -> activations"
    ),
    "C5.1": (
        "Six libraries each own one stage (Hub, datasets, tokenizers, transformers, peft, trl; accelerate "
        "launches); six lines assemble a LoRA SFT, and each maps to a line of the 20-line loop"
    ),
    "C5.2": "The numbers in `config.json` are the architecture",
    "C5.3": (
        "`tokenizer.json` + the chat template decide how a conversation becomes tokens and which tokens count"
        " in the loss"
    ),
    "C5.4": "LoRA makes a CPU fine-tune possible",
    "C5.5": "Most of a conversation is masked out of the loss",
    "C5.6": "The end-of-turn token must be in the loss",
    "C5.7": "Reading down from `compute_loss` is the fastest way to learn post-training",
    "C6.1": (
        "The ridge point is peak compute / memory bandwidth; decode has arithmetic intensity ~1, far left of "
        "the ridge, so it is memory-bound and larger batches are faster"
    ),
    "C6.2": "Quantization helps inference, hardly training: decode sits left of the ridge, training right",
    "C6.3": "GPU memory is four blocks (weights, gradients, optimizer state, activations)",
    "C6.4": (
        "Seven records make a run reproducible three months later: code version (commit), data version "
        "(revision), config (`asdict(cfg)` -> config.json), environment (pip freeze), seed, hardware, logs "
        "and checkpoints"
    ),
    "C6.5": "Identical runs under one seed need `torch.use_deterministic_algorithms`; another seed moves the result",
    "C6.6": (
        "Read a profiler table by sorting slow time into one of: GEMM, attention, `copy_`, launch overhead, device idle"
    ),
}


def claim_text(claim_id: str) -> str:
    """The claim ``claim_id`` (``C2.2``) in the seed's words, in English.

    Raises:
        UsageError: an ID that is not a claim of the seed, with the known IDs.
    """
    try:
        return CLAIMS[claim_id]
    except KeyError:
        raise UsageError(f"no claim {claim_id!r}", hint=f"claims: {', '.join(CLAIMS)}") from None


def lab(
    *,
    id: str,
    title: str,
    claims: Sequence[str],
    seed: Sequence[SeedFigure] = (),
    rule_history: Sequence[RuleChange] = (),
) -> Callable[[Callable[[LabContext], LabOutput]], Callable[[LabContext], LabOutput]]:
    """Register ``run`` as the lab ``id`` covering ``claims``, with the seed's figures and the history of its
    rules (each change after the lab first ran: when, why, and which rule judges)."""

    def register(run: Callable[[LabContext], LabOutput]) -> Callable[[LabContext], LabOutput]:
        if id in _REGISTRY and _REGISTRY[id].module != run.__module__:
            raise RuntimeError(f"lab id {id} registered twice ({_REGISTRY[id].module}, {run.__module__})")
        _REGISTRY[id] = Lab(
            id=id,
            title=title,
            claims=tuple(claims),
            seed_figures=tuple(seed),
            run=run,
            module=run.__module__,
            rule_history=tuple(rule_history),
        )
        return run

    return register


def _natural_key(lab_id: str) -> list[object]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", lab_id)]


def all_labs() -> list[Lab]:
    """Every lab, imported on first call, sorted by ID (C1.1, C1.2, ..., C2.10)."""
    import expkit.labs as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name.startswith("lab_"):
            importlib.import_module(f"expkit.labs.{info.name}")
    return sorted(_REGISTRY.values(), key=lambda entry: _natural_key(entry.id))


def select_labs(ids: Sequence[str]) -> list[Lab]:
    """Labs named by lab ID or by a claim ID they cover (case-insensitive); all when ``ids`` is empty.

    Raises:
        UsageError: an ID matching no lab, with the known lab IDs.
    """
    labs = all_labs()
    if not ids:
        return labs
    chosen: list[Lab] = []
    for wanted in ids:
        w = wanted.strip().upper()
        hits = [entry for entry in labs if entry.id.upper() == w or w in (c.upper() for c in entry.claims)]
        if not hits:
            known = ", ".join(entry.id for entry in labs)
            raise UsageError(f"no lab or claim {wanted!r}", hint=f"known labs: {known}")
        chosen.extend(h for h in hits if h not in chosen)
    return chosen
