"""The training loop as visible code (nanoGPT style), its one-step form for profiling, and evaluation.

``train_step`` holds the twenty lines the seed is about (C3.1, C3.6), one concept per line;
``train_charlm`` wraps it with the shell a trainer adds: data, schedule, checks, evals, checkpoints,
DDP and the run record.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn

from expkit.train.config import TrainConfig
from expkit.train.corpus import Corpus
from expkit.train.data import Shard, eval_offsets, make_loader
from expkit.train.distributed import DistContext
from expkit.train.model import CharLM, CharLMConfig
from expkit.train.schedule import WarmupCosine

__all__ = ["StepOutput", "TrainingSetup", "build_optimizer", "estimate_val_loss", "setup_training", "train_step"]

IGNORE_INDEX = -100  # F.cross_entropy's default; padding labels set to -100 add nothing to the loss


@dataclass
class TrainingSetup:
    """The five objects (Dataset and DataLoader behind ``batches``, the model, the loss in ``train_step``,
    the optimizer) plus the schedule, ready for ``train_step``. Mutable: it is the training state."""

    model: nn.Module  # the bare CharLM, or DDP(CharLM) under torchrun
    module: CharLM  # the bare CharLM (checkpoints, checks)
    optimizer: torch.optim.Optimizer
    schedule: WarmupCosine
    batches: Iterator[tuple[torch.Tensor, torch.Tensor]] = field(repr=False)
    model_config: CharLMConfig
    train_config: TrainConfig
    device: str
    dist: DistContext


@dataclass(frozen=True)
class StepOutput:
    """One optimizer step: mean micro-batch loss and the pre-clip gradient norm, both still tensors
    (reading them with ``.item()`` is a sync point on a GPU; C3.7)."""

    loss: torch.Tensor
    grad_norm: torch.Tensor
    last_inputs: torch.Tensor


def build_optimizer(model: nn.Module, cfg: TrainConfig, *, device: str) -> torch.optim.Optimizer:
    """AdamW with weight decay on matrices only (embeddings included, norms and biases excluded), as nanoGPT."""
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    no_decay = [p for p in params if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(
        groups, lr=cfg.lr_max, betas=(cfg.beta1, cfg.beta2), fused=device.startswith("cuda") or None
    )


def train_step(
    setup: TrainingSetup, step: int, *, after_backward: Callable[[torch.Tensor, torch.Tensor], None] | None = None
) -> StepOutput:
    """Run optimizer step number ``step`` (0-based): the visible loop body.

    ``after_backward(x, loss)`` runs once the gradients of the step are complete and before they are
    clipped, applied and cleared (the sanity checks use it).
    """
    model, opt, cfg = setup.model, setup.optimizer, setup.train_config
    V = setup.model_config.vocab_size
    lr = setup.schedule.lr_at(step)  # schedule: warmup + cosine (C3.6)
    for group in opt.param_groups:
        group["lr"] = lr  # ... applied to the Optimizer
    loss_sum = torch.zeros((), device=setup.device)
    for micro in range(cfg.grad_accum):  # accumulation: k micro-batches, one step
        x, y = next(setup.batches)  # DataLoader -> Dataset[i] -> collate
        x, y = x.to(setup.device), y.to(setup.device)  # (B, T), (B, T) int64
        sync = micro == cfg.grad_accum - 1 or not setup.dist.enabled
        # DDP: all-reduce on the last one only (no_sync is DDP's; the stubs type Module attributes Tensor | Module)
        no_sync = contextlib.nullcontext() if sync else model.no_sync()  # type: ignore[operator]  # see above
        autocast = (
            torch.autocast(device_type=setup.device.split(":")[0], dtype=torch.bfloat16)
            if cfg.bf16_autocast
            else contextlib.nullcontext()
        )
        with no_sync:
            with autocast:
                logits = model(x)  # nn.Module forward; autograd records (B, T, V)
            loss = F.cross_entropy(
                logits.float().view(-1, V),  # loss in fp32, whatever the autocast
                y.view(-1),
                ignore_index=IGNORE_INDEX,
            )
            (loss / cfg.grad_accum).backward()  # autograd: gradients ADD into .grad
        loss_sum += loss.detach()
    mean_loss = loss_sum / cfg.grad_accum
    if after_backward is not None:
        after_backward(x, mean_loss)
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)  # clip the global norm to 1.0
    opt.step()  # Optimizer: p <- p - lr * AdamW(grad)
    opt.zero_grad(set_to_none=True)  # clear, or the next backward adds on (C3.2)
    return StepOutput(loss=mean_loss, grad_norm=grad_norm, last_inputs=x)


@torch.no_grad()  # evaluation keeps no graph (C3.3)
def estimate_val_loss(
    model: nn.Module,
    ids: torch.Tensor,
    *,
    seq_len: int,
    n_windows: int,
    batch_size: int,
    device: str,
    dist: DistContext | None = None,
) -> float:
    """Mean cross-entropy (nats per character) over ``n_windows`` fixed, evenly spaced windows of ``ids``.

    Under DDP each rank scores every ``world_size``-th window and the sums are all-reduced.
    """
    was_training = model.training
    model.eval()
    offsets = eval_offsets(ids.numel(), block_size=seq_len, n_windows=n_windows)
    if dist is not None and dist.enabled:
        offsets = offsets[dist.rank :: dist.world_size]
    total = torch.zeros(2, dtype=torch.float64, device=device)  # (sum of losses, count of characters)
    for i in range(0, len(offsets), batch_size):
        chunk = torch.stack([ids[o : o + seq_len + 1] for o in offsets[i : i + batch_size]]).long().to(device)
        x, y = chunk[:, :-1], chunk[:, 1:]  # (b, T), (b, T)
        logits = model(x)  # (b, T, V)
        loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), y.reshape(-1), reduction="sum")
        total += torch.stack([loss.double(), torch.tensor(float(y.numel()), dtype=torch.float64, device=device)])
    if dist is not None and dist.enabled:
        import torch.distributed as tdist

        tdist.all_reduce(total, op=tdist.ReduceOp.SUM)
    model.train(was_training)
    return float(total[0] / total[1])


def setup_training(
    *,
    model_config: CharLMConfig,
    train_config: TrainConfig,
    corpus: Corpus,
    seed: int,
    device: str,
    schedule: WarmupCosine,
    dist: DistContext | None = None,
    start_step: int = 0,
) -> TrainingSetup:
    """Build model, optimizer and the DataLoader iterator positioned at ``start_step`` (a fresh process
    can run exactly one ``train_step`` from here: what a profiler needs)."""
    dist = dist or DistContext(0, 0, 1, None, device)
    torch.manual_seed(seed)
    module = CharLM(model_config).to(device)
    model: nn.Module = module
    if dist.enabled:
        from torch.nn.parallel import DistributedDataParallel as DDP

        model = DDP(module, device_ids=[int(device.split(":")[1])] if device.startswith("cuda") else None)
    if train_config.compile:
        model = cast(nn.Module, torch.compile(model))  # an OptimizedModule; the stub only says Callable
    opt = build_optimizer(module, train_config, device=device)
    batches = _iter_batches(
        corpus.train, train_config, seed=seed, start=start_step * train_config.grad_accum, dist=dist
    )
    return TrainingSetup(
        model=model,
        module=module,
        optimizer=opt,
        schedule=schedule,
        batches=batches,
        model_config=model_config,
        train_config=train_config,
        device=device,
        dist=dist,
    )


def _iter_batches(
    ids: torch.Tensor, cfg: TrainConfig, *, seed: int, start: int, dist: DistContext
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    loader = make_loader(
        ids,
        block_size=cfg.seq_len,
        batch_size=cfg.batch_size,
        seed=seed,
        start=start,
        shard=Shard(dist.rank, dist.world_size),
        num_workers=cfg.num_workers,
    )
    return iter(loader)


def perplexity(loss_nats: float) -> float:
    """exp(loss); inf when the loss overflows."""
    try:
        return math.exp(loss_nats)
    except OverflowError:
        return math.inf


def describe_objects(setup: TrainingSetup) -> dict[str, Any]:
    """The five objects of the usage layer, by type name (C3.1)."""
    return {
        "Dataset": "CharWindows",
        "DataLoader": "torch.utils.data.DataLoader",
        "nn.Module": type(setup.module).__name__,
        "loss": "F.cross_entropy",
        "Optimizer": type(setup.optimizer).__name__,
    }
