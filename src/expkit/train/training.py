"""``train_charlm``: the shell around the visible loop (data, schedule drawn before step 1, sanity checks,
evals, checkpoints, DDP, the run record) and its result, ``TrainResult``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from expkit.errors import CheckFailed, InputError, UsageError
from expkit.train.checkpoint import load_checkpoint, restore_checkpoint, save_checkpoint
from expkit.train.config import TrainConfig
from expkit.train.corpus import Corpus, load_corpus
from expkit.train.distributed import DistContext, all_reduce_mean, init_distributed
from expkit.train.loop import (
    TrainingSetup,
    estimate_val_loss,
    perplexity,
    setup_training,
    train_step,
)
from expkit.train.model import (
    ASCII_VOCAB,
    CharLMConfig,
    count_parameters,
    flops_per_token,
)
from expkit.train.sanity import (
    FirstLossCheck,
    GradCheck,
    NonFiniteCheck,
    check_first_loss,
    find_params_without_grad,
    find_stale_grads,
    locate_first_nonfinite,
)
from expkit.train.schedule import WarmupCosine
from expkit.hardware.threads import torch_threads

__all__ = ["Calibration", "TrainEvent", "TrainResult", "measure_mfu", "train_charlm"]


@dataclass(frozen=True)
class Calibration:
    """How many steps fit the time budget: ``max_steps = budget_s / step_s`` (measured before step 1)."""

    budget_s: float
    step_s: float
    steps_timed: int
    max_steps: int


@dataclass(frozen=True)
class TrainEvent:
    """Progress for a caller (the CLI): ``planned`` (before step 1), ``check``, ``log``, ``eval``."""

    kind: str
    step: int
    max_steps: int
    values: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TrainResult:
    """A finished training run. Losses are mean cross-entropy in nats per character; PPL = exp(loss).

    ``tokens_per_s`` counts every process's tokens over the time spent in optimizer steps (evals and
    checkpoint writes excluded). ``mfu`` is None with ``mfu_reason`` when no peak FLOP/s is known.
    """

    params: int
    first_loss: float | None
    ln_vocab: float
    initial_val_loss: float
    initial_val_ppl: float
    final_val_loss: float
    final_val_ppl: float
    tokens_per_s: float
    mfu: float | None
    mfu_reason: str | None
    steps: int
    start_step: int
    tokens: int
    train_s: float
    wall_s: float
    stopped_by: str
    run_id: str | None
    run_dir: str | None
    checkpoint: str | None
    schedule: WarmupCosine
    schedule_figure: str | None
    checks: tuple[FirstLossCheck | GradCheck | NonFiniteCheck, ...]
    losses: tuple[tuple[int, float], ...]
    val_losses: tuple[tuple[int, float], ...]
    model_config: CharLMConfig
    train_config: TrainConfig
    corpus: dict[str, Any]
    seed: int
    device: str
    world_size: int
    flops_per_token: int
    calibration: Calibration | None


def measure_mfu(*, tokens_per_s: float, flops_per_token_: int, device: str) -> tuple[float | None, str | None]:
    """Model FLOPs utilisation = tokens/s x FLOPs/token / peak FLOP/s, against the bf16 dense peak of the
    GPU registry (``expkit.hardware``). None with the reason on a CPU or an unknown GPU."""
    if not device.startswith("cuda"):
        return None, (
            "no peak FLOP/s is registered for CPUs (the hardware registry lists GPUs); "
            "tokens/s is the figure to compare here"
        )
    try:
        from expkit.hardware import find_gpu_for_device
    except ImportError:
        return None, "expkit.hardware is not available"
    name = torch.cuda.get_device_name(torch.device(device))
    spec = find_gpu_for_device(name)
    if spec is None:
        return None, f"GPU {name!r} is not in the hardware registry"
    return tokens_per_s * flops_per_token_ / spec.peak_flop_s, None


def _calibrate(setup: TrainingSetup, corpus: Corpus, *, budget_s: float, seed: int, n_timed: int = 3) -> Calibration:
    """Time forward + backward on throwaway batches (no optimizer step, gradients cleared): the step
    time that decides ``max_steps``. One untimed warm-up step first."""
    import torch.nn.functional as F

    from expkit.train.data import make_loader

    cfg = setup.train_config
    it = iter(
        make_loader(
            corpus.train,
            block_size=cfg.seq_len,
            batch_size=cfg.batch_size,
            seed=seed + 7919,
            stop=(n_timed + 1) * cfg.grad_accum,
        )
    )
    times = []
    for i in range(n_timed + 1):
        t0 = time.perf_counter()
        for _ in range(cfg.grad_accum):
            x, y = next(it)
            logits = setup.module(x.to(setup.device))
            loss = F.cross_entropy(logits.float().view(-1, logits.size(-1)), y.to(setup.device).view(-1))
            loss.backward()
        float(loss.detach())  # wait for the device
        setup.optimizer.zero_grad(set_to_none=True)
        if i:
            times.append(time.perf_counter() - t0)
    # forward + backward only; clip, AdamW and data add ~5% (measured against full steps on 2 cores)
    step_s = sorted(times)[len(times) // 2] * 1.05
    return Calibration(
        budget_s=budget_s,
        step_s=step_s,
        steps_timed=n_timed,
        max_steps=max(cfg.warmup_steps + 2, int(budget_s / step_s)),
    )


def _open_run(
    *, record: bool, config: dict[str, Any], data: list[str], seed: int, store: str | Path | None, name: str | None
):
    import contextlib

    if not record:
        return contextlib.nullcontext(None)
    from expkit.runs.run import start

    return start(config=config, data=data, seed=seed, store=store, name=name)


def _restores_torch_threads(fn: Callable[..., TrainResult]) -> Callable[..., TrainResult]:
    """``num_threads`` changes a process-wide torch setting: put it back when training ends."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> TrainResult:
        with torch_threads(None):  # restores the count on exit, whatever the run set
            return fn(*args, **kwargs)

    return wrapper


@_restores_torch_threads
def train_charlm(
    *,
    model_config: CharLMConfig | None = None,
    train_config: TrainConfig | None = None,
    corpus: Corpus | str | Path | None = None,
    seed: int = 0,
    device: str = "cpu",
    minutes: float | None = None,
    resume: str | Path | None = None,
    stop_at_step: int | None = None,
    store: str | Path | None = None,
    name: str | None = None,
    record: bool = True,
    checkpoint_dir: str | Path | None = None,
    draw_schedule: Callable[[WarmupCosine, Path], Path | None] | None = None,
    on_event: Callable[[TrainEvent], None] | None = None,
) -> TrainResult:
    """Train the char LM for ``train_config.max_steps`` steps or ``minutes`` of wall time, with checks.

    Args:
        model_config, train_config: defaults when None (see ``CharLMConfig``, ``TrainConfig``).
        corpus: a Corpus, a path for ``load_corpus``, or None for the stdlib's sources.
        seed: seeds init (``torch.manual_seed``) and the batch order.
        device: ``cpu`` or ``cuda``; under torchrun each rank takes ``cuda:LOCAL_RANK``.
        minutes: time budget when ``train_config.max_steps`` is None; the step count is fixed before
            step 1 from a measured step time, so the cosine schedule ends when the budget does.
        resume: a checkpoint directory (or a folder of them: the newest) to continue from.
        stop_at_step: stop after this step although the schedule goes on (to test resume).
        store, name, record: the run store (``expkit.runs``); ``record=False`` writes no run.
        checkpoint_dir: where checkpoints go (default: the run's ``checkpoints/``; None without a run).
        draw_schedule: ``f(schedule, suggested_path) -> written path``, called before step 1 (C3.6).
        on_event: progress callback (rank 0 only).

    Returns:
        TrainResult.

    Raises:
        UsageError: bad device/budget combination, ``seq_len`` > ``block_size``.
        InputError: a corpus too small for one window, a bad or mismatched checkpoint.
        CheckFailed: the NaN guard stopped training (the message names the first non-finite module).
    """
    mcfg = model_config or CharLMConfig()
    tcfg = train_config or TrainConfig()
    if tcfg.seq_len > mcfg.block_size:
        raise UsageError(
            f"seq_len={tcfg.seq_len} exceeds the model's block_size={mcfg.block_size}",
            hint="lower seq_len or raise block_size with --config",
        )
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError(f"device={device!r} but CUDA is not available here", hint="use --device cpu")
    if tcfg.max_steps is None and minutes is None and resume is None:
        raise UsageError("give a time budget (minutes) or train_config.max_steps")
    if minutes is not None and not (math.isfinite(minutes) and minutes > 0):
        raise UsageError(f"minutes={minutes} must be a finite number > 0", hint="e.g. --minutes 1")
    if mcfg.vocab_size < ASCII_VOCAB:
        raise UsageError(
            f"vocab_size={mcfg.vocab_size} is smaller than the {ASCII_VOCAB} ASCII code points the char LM reads",
            hint=f"leave vocab_size at {ASCII_VOCAB} (or raise it)",
        )
    if not 0 <= seed < 2**63:
        raise UsageError(f"seed={seed} must be in [0, 2**63)", hint="e.g. --seed 0")
    wall0 = time.perf_counter()
    if tcfg.num_threads is not None:  # on a shared machine 1 thread can beat 2 (no OpenMP spin-waits)
        torch.set_num_threads(tcfg.num_threads)
    if not isinstance(corpus, Corpus):
        corpus = load_corpus(corpus)
    for split, ids in (("train", corpus.train), ("val", corpus.val)):
        if ids.numel() < tcfg.seq_len + 1:
            raise InputError(
                f"the {split} split has {ids.numel()} characters, fewer than one window of "
                f"seq_len + 1 = {tcfg.seq_len + 1}",
                path=corpus.source,
                hint="give more text or lower seq_len with --config seq_len=N",
            )
    dist = init_distributed(device)
    device = dist.device
    emit = on_event if (on_event is not None and dist.is_main) else (lambda e: None)

    ckpt = None
    if resume is not None:
        ckpt = load_checkpoint(resume, model_config=asdict(mcfg))
        if ckpt.extra.get("world_size", 1) != dist.world_size or ckpt.extra.get("seed") != seed:
            raise InputError(
                f"checkpoint was written with seed {ckpt.extra.get('seed')} and world size "
                f"{ckpt.extra.get('world_size')}, this run has seed {seed} and world size "
                f"{dist.world_size}: the batch order would differ",
                path=ckpt.path,
                hint="resume with the same --seed and number of processes",
            )
    placeholder = WarmupCosine(lr_max=tcfg.lr_max, lr_min=tcfg.lr_min, warmup_steps=0, max_steps=1)
    start_step = ckpt.step if ckpt else 0
    setup = setup_training(
        model_config=mcfg,
        train_config=tcfg,
        corpus=corpus,
        seed=seed,
        device=device,
        schedule=placeholder,
        dist=dist,
        start_step=start_step,
    )
    calibration = None
    if ckpt is not None:
        try:
            schedule = WarmupCosine(**ckpt.extra["schedule"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(
                f"the manifest's schedule is missing or malformed ({type(exc).__name__}: {exc})",
                path=ckpt.path / "manifest.json",
            ) from exc
    elif tcfg.max_steps is not None:
        schedule = WarmupCosine(
            lr_max=tcfg.lr_max,
            lr_min=tcfg.lr_min,
            warmup_steps=min(tcfg.warmup_steps, tcfg.max_steps),
            max_steps=tcfg.max_steps,
        )
    else:
        assert minutes is not None  # no max_steps, no resume: the check above required a time budget
        budget_s = minutes * 60.0 - (time.perf_counter() - wall0)
        calibration = _calibrate(setup, corpus, budget_s=budget_s, seed=seed)
        max_steps = calibration.max_steps
        if dist.enabled:  # every rank must run the same number of steps: rank 0's count wins
            import torch.distributed as tdist

            box = [max_steps]
            tdist.broadcast_object_list(box, src=0)
            max_steps = box[0]
        schedule = WarmupCosine(
            lr_max=tcfg.lr_max, lr_min=tcfg.lr_min, warmup_steps=tcfg.warmup_steps, max_steps=max_steps
        )
    setup.schedule = schedule
    last_step = schedule.max_steps if stop_at_step is None else min(stop_at_step, schedule.max_steps)

    params = count_parameters(setup.module)
    fpt = flops_per_token(mcfg, seq_len=tcfg.seq_len)
    corpus_info = {
        "source": corpus.source,
        "fingerprint": corpus.fingerprint,
        "files": len(corpus.files),
        "split": corpus.split,
        "n_train_chars": corpus.n_train_chars,
        "n_val_chars": corpus.n_val_chars,
        "n_non_ascii": corpus.n_non_ascii,
        "non_ascii": corpus.non_ascii,
    }
    run_config = {
        "model": asdict(mcfg),
        "train": asdict(tcfg),
        "corpus": corpus_info,
        "device": device,
        "world_size": dist.world_size,
        "schedule": asdict(schedule),
        "minutes": minutes,
        "resumed_from": str(ckpt.path) if ckpt else None,
    }
    data_paths = list(corpus.paths)
    checks: list[Any] = []
    losses: list[tuple[int, float]] = []
    val_losses: list[tuple[int, float]] = []
    first_loss: float | None = None
    schedule_figure: str | None = None
    saved: str | None = None

    with _open_run(record=record, config=run_config, data=data_paths, seed=seed, store=store, name=name) as run:
        owner = run is not None and dist.is_main
        ckpt_dir = Path(checkpoint_dir) if checkpoint_dir else (Path(run.dir) / "checkpoints" if run else None)
        if ckpt is not None:
            restore_checkpoint(ckpt, model=setup.module, optimizer=setup.optimizer)
        if draw_schedule is not None and dist.is_main:  # the schedule as a figure, before step 1 (C3.6)
            import tempfile

            drawn = draw_schedule(schedule, Path(tempfile.mkdtemp(prefix="expkit-schedule-")) / "lr_schedule.png")
            if drawn is not None:
                schedule_figure = str(run.artifact(drawn) if owner else drawn)
        emit(
            TrainEvent(
                "planned",
                start_step,
                schedule.max_steps,
                {
                    "params": params,
                    "schedule": schedule,
                    "calibration": calibration,
                    "schedule_figure": schedule_figure,
                    "run_id": run.id if run else None,
                },
            )
        )

        def evaluate(step: int) -> float:
            v = estimate_val_loss(
                setup.model,
                corpus.val,
                seq_len=tcfg.seq_len,
                n_windows=tcfg.eval_windows,
                batch_size=tcfg.batch_size * 2,
                device=device,
                dist=dist,
            )
            val_losses.append((step, v))
            if owner:
                run.log(step, val_loss=v, val_ppl=perplexity(v))
            emit(TrainEvent("eval", step, schedule.max_steps, {"val_loss": v, "val_ppl": perplexity(v)}))
            return v

        initial_val = evaluate(start_step)
        train_s = 0.0
        tokens_per_step = tcfg.batch_size * tcfg.seq_len * tcfg.grad_accum * dist.world_size
        stopped_by = "max_steps" if stop_at_step is None else "stop_at_step"
        step = start_step
        nan_check_every = 1 if device == "cpu" else tcfg.log_interval  # a CPU check costs no sync (C3.7)

        def after_backward(x: torch.Tensor, loss: torch.Tensor) -> None:
            nonlocal first_loss
            if step == 0:
                first_loss = float(all_reduce_mean(loss, dist))
                if tcfg.check_first_loss:
                    checks.append(check_first_loss(first_loss, vocab_size=mcfg.vocab_size))
                    emit(TrainEvent("check", step, schedule.max_steps, {"check": checks[-1]}))
            if step == start_step and tcfg.check_grads:
                checks.append(find_params_without_grad(setup.module))
                emit(TrainEvent("check", step, schedule.max_steps, {"check": checks[-1]}))
            if tcfg.nan_guard and step % nan_check_every == 0 and not bool(torch.isfinite(all_reduce_mean(loss, dist))):
                where = locate_first_nonfinite(setup.module, x)  # every rank stops: the mean is the same everywhere
                checks.append(where)
                raise CheckFailed(
                    f"loss is {float(loss)} at step {step}: {where.detail}",
                    hint="lower lr_max, check the data, or turn off bf16_autocast",
                )

        for step in range(start_step, last_step):
            if tcfg.check_zero_grad and step == start_step + 1:  # gradients must be cleared between steps
                checks.append(find_stale_grads(setup.module))
                emit(TrainEvent("check", step, schedule.max_steps, {"check": checks[-1]}))
            t0 = time.perf_counter()
            out = train_step(setup, step, after_backward=after_backward)
            is_log = (step + 1) % tcfg.log_interval == 0 or step == last_step - 1 or step == start_step
            if is_log:
                loss_v = float(all_reduce_mean(out.loss, dist))  # .item(): the sync point, every log_interval
                train_s += time.perf_counter() - t0
                losses.append((step, loss_v))
                tok_s = (step + 1 - start_step) * tokens_per_step / train_s
                if owner:
                    run.log(
                        step, loss=loss_v, lr=schedule.lr_at(step), grad_norm=float(out.grad_norm), tokens_per_s=tok_s
                    )
                emit(
                    TrainEvent(
                        "log",
                        step,
                        schedule.max_steps,
                        {"loss": loss_v, "lr": schedule.lr_at(step), "tokens_per_s": tok_s},
                    )
                )
            else:
                train_s += time.perf_counter() - t0
            if (step + 1) % tcfg.eval_interval == 0 and step + 1 < last_step:
                evaluate(step + 1)
            if tcfg.checkpoint_interval and (step + 1) % tcfg.checkpoint_interval == 0 and ckpt_dir and dist.is_main:
                saved = str(_save(ckpt_dir, setup, step + 1, schedule, seed, dist, corpus))
            # the budget is a hard cap: steps slower than calibrated (a busier machine) end the run early,
            # before the cosine reaches lr_min; checked every step (every log step under DDP: a collective)
            if (
                calibration is not None
                and (is_log or not dist.enabled)
                and _over_budget(train_s >= calibration.budget_s and step + 1 < last_step, dist)
            ):
                stopped_by = "time budget (steps ran slower than calibrated; the cosine did not finish)"
                break
        steps_done = step + 1 - start_step
        final_val = evaluate(step + 1)
        if ckpt_dir and dist.is_main:
            saved = str(_save(ckpt_dir, setup, step + 1, schedule, seed, dist, corpus))
        tok_s = steps_done * tokens_per_step / train_s if train_s > 0 else math.nan
        mfu, mfu_reason = measure_mfu(tokens_per_s=tok_s, flops_per_token_=fpt, device=device)
        if owner:
            run.log(
                step + 1,
                final_val_loss=final_val,
                final_val_ppl=perplexity(final_val),
                tokens_per_s=tok_s,
                **({"mfu": mfu} if mfu is not None else {}),
            )
        return TrainResult(
            params=params,
            first_loss=first_loss,
            ln_vocab=math.log(mcfg.vocab_size),
            initial_val_loss=initial_val,
            initial_val_ppl=perplexity(initial_val),
            final_val_loss=final_val,
            final_val_ppl=perplexity(final_val),
            tokens_per_s=tok_s,
            mfu=mfu,
            mfu_reason=mfu_reason,
            steps=steps_done,
            start_step=start_step,
            tokens=steps_done * tokens_per_step,
            train_s=train_s,
            wall_s=time.perf_counter() - wall0,
            stopped_by=stopped_by,
            run_id=run.id if run else None,
            run_dir=str(run.dir) if run else None,
            checkpoint=saved,
            schedule=schedule,
            schedule_figure=schedule_figure,
            checks=tuple(checks),
            losses=tuple(losses),
            val_losses=tuple(val_losses),
            model_config=mcfg,
            train_config=tcfg,
            corpus=corpus_info,
            seed=seed,
            device=device,
            world_size=dist.world_size,
            flops_per_token=fpt,
            calibration=calibration,
        )


def _over_budget(mine: bool, dist: DistContext) -> bool:
    """True when any rank ran over its time budget (all ranks must stop at the same step)."""
    if not dist.enabled:
        return mine
    import torch.distributed as tdist

    flag = torch.tensor([1.0 if mine else 0.0])
    tdist.all_reduce(flag, op=tdist.ReduceOp.MAX)
    return bool(flag.item())


def _save(
    directory: Path,
    setup: TrainingSetup,
    step: int,
    schedule: WarmupCosine,
    seed: int,
    dist: DistContext,
    corpus: Corpus,
) -> Path:
    return save_checkpoint(
        directory,
        model=setup.module,
        optimizer=setup.optimizer,
        step=step,
        model_config=asdict(setup.model_config),
        train_config=asdict(setup.train_config),
        extra={
            "schedule": asdict(schedule),
            "seed": seed,
            "world_size": dist.world_size,
            "corpus_fingerprint": corpus.fingerprint,
        },
    )
