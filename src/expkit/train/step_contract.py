"""What ``train_step`` does, observed while it runs (C3.6): the dtype the loss is computed in under bf16
autocast, the gradient norm the optimizer sees after clipping, the gradient at ``-100`` labels, and
``.grad`` after ``zero_grad(set_to_none=True)``. Behaviour, not a search of the source text."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from expkit.train.config import TrainConfig
from expkit.train.distributed import DistContext
from expkit.train.loop import TrainingSetup, build_optimizer, train_step
from expkit.train.model import CharLM, CharLMConfig
from expkit.train.schedule import WarmupCosine

__all__ = ["SEED_IGNORE_INDEX", "StepContract", "measure_step_contract"]

SEED_IGNORE_INDEX = -100  # the seed's label (C3.6), written here and not read from the loop, so a loop that
# ignored another value would show a gradient at these positions


@dataclass(frozen=True)
class StepContract:
    """One ``train_step`` under bf16 autocast, observed from outside.

    Attributes:
        logits_dtype: dtype the model returned inside the step (bfloat16 shows autocast was on).
        loss_input_dtype: dtype of the logits ``F.cross_entropy`` received.
        loss_dtype: dtype of the loss ``F.cross_entropy`` returned.
        grad_norm_before_clip: global gradient norm after backward (what ``clip_grad_norm_`` returned).
        grad_norm_at_step: global gradient norm the optimizer saw when ``step()`` ran.
        grad_clip: the configured clip (``TrainConfig.grad_clip``; the loop's default unless given).
        ignored_positions: label positions set to -100 (``SEED_IGNORE_INDEX``) in the batch.
        max_abs_grad_ignored: largest |d loss / d logits| at those positions.
        max_abs_grad_counted: largest |d loss / d logits| at the other positions.
        grads_none_after_step: every parameter's ``.grad`` is None when ``train_step`` returns.
    """

    logits_dtype: str
    loss_input_dtype: str
    loss_dtype: str
    grad_norm_before_clip: float
    grad_norm_at_step: float
    grad_clip: float
    ignored_positions: int
    max_abs_grad_ignored: float
    max_abs_grad_counted: float
    grads_none_after_step: bool


class _LossDtypes(TorchFunctionMode):
    """Records the input and output dtypes of every ``F.cross_entropy`` call made while active."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple[torch.dtype, torch.dtype]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204 - torch's protocol
        out = func(*args, **(kwargs or {}))
        if func is F.cross_entropy:
            self.calls.append((args[0].dtype, out.dtype))
        return out


def _global_grad_norm(params: list[torch.nn.Parameter]) -> float:
    grads = [p.grad.detach().float() for p in params if p.grad is not None]
    return float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))) if grads else 0.0


def measure_step_contract(
    *,
    model_config: CharLMConfig,
    batch_size: int = 4,
    seq_len: int = 32,
    seed: int = 0,
    grad_clip: float | None = None,
    ignored_fraction: float = 0.5,
) -> StepContract:
    """Run one ``train_step`` under bf16 autocast on a batch whose first ``ignored_fraction`` of label positions
    are ``-100`` and report what it did.

    Args:
        model_config: the char LM to build.
        grad_clip: ``TrainConfig.grad_clip`` for the step; None: the loop's own default (``TrainConfig()``),
            which is what the claim is about.
        ignored_fraction: share of each row's label positions set to -100.

    Example:
        >>> c = measure_step_contract(model_config=CharLMConfig())
        >>> c.loss_dtype, round(c.grad_norm_before_clip, 2), round(c.grad_norm_at_step, 4)  # doctest: +SKIP
        ('torch.float32', 4.63, 1.0)
    """
    torch.manual_seed(seed)
    clip = TrainConfig().grad_clip if grad_clip is None else grad_clip
    cfg = TrainConfig(
        batch_size=batch_size, seq_len=seq_len, bf16_autocast=True, max_steps=1, warmup_steps=0, grad_clip=clip
    )
    model = CharLM(model_config)
    opt = build_optimizer(model, cfg, device="cpu")
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(model_config.vocab_size, (batch_size, seq_len), generator=g)
    y = torch.randint(model_config.vocab_size, (batch_size, seq_len), generator=g)
    n_ignored = int(seq_len * ignored_fraction)
    y[:, :n_ignored] = SEED_IGNORE_INDEX
    batches: Iterator[tuple[torch.Tensor, torch.Tensor]] = iter([(x, y)])
    setup = TrainingSetup(
        model=model,
        module=model,
        optimizer=opt,
        schedule=WarmupCosine(lr_max=cfg.lr_max, lr_min=cfg.lr_min, warmup_steps=0, max_steps=1),
        batches=batches,
        model_config=model_config,
        train_config=cfg,
        device="cpu",
        dist=DistContext(0, 0, 1, None, "cpu"),
    )

    seen: dict[str, object] = {}

    def on_forward(_module: torch.nn.Module, _inputs: object, logits: torch.Tensor) -> None:
        seen["logits_dtype"] = logits.dtype
        logits.register_hook(lambda grad: seen.__setitem__("dlogits", grad.detach().float().clone()))

    params = [p for p in model.parameters() if p.requires_grad]
    hooks = [
        model.register_forward_hook(on_forward),
        opt.register_step_pre_hook(lambda *_: seen.__setitem__("norm_at_step", _global_grad_norm(params))),
    ]
    mode = _LossDtypes()
    try:
        with mode:
            out = train_step(setup, 0)
    finally:
        for h in hooks:
            h.remove()
    if len(mode.calls) != 1:
        raise RuntimeError(f"train_step called F.cross_entropy {len(mode.calls)} times; one micro-batch needs one")
    ((loss_in, loss_out),) = mode.calls
    dlogits = seen["dlogits"]  # (B, T, V): d loss / d logits
    if not isinstance(dlogits, torch.Tensor):
        raise RuntimeError("train_step ran no backward through the model's logits")
    return StepContract(
        logits_dtype=str(seen["logits_dtype"]),
        loss_input_dtype=str(loss_in),
        loss_dtype=str(loss_out),
        grad_norm_before_clip=float(out.grad_norm),
        grad_norm_at_step=float(seen["norm_at_step"]),  # type: ignore[arg-type]
        grad_clip=cfg.grad_clip,
        ignored_positions=batch_size * n_ignored,
        max_abs_grad_ignored=float(dlogits[:, :n_ignored].abs().max()),
        max_abs_grad_counted=float(dlogits[:, n_ignored:].abs().max()),
        grads_none_after_step=all(p.grad is None for p in params),
    )
