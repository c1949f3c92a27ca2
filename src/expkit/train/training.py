"""``train_charlm``: the seed's loop (``_run_steps``, each step in ``loop.train_step``) with the shell a
trainer adds kept around it, not inside it: validation, schedule drawn before step 1, sanity checks,
evals, checkpoints, DDP and the run record live in named helpers and in ``_Records``.
"""

from __future__ import annotations

import contextlib
import math
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from expkit.errors import CheckFailed, InputError, UsageError
from expkit.hardware.threads import torch_threads
from expkit.train.budget import Calibration, calibrate, over_budget
from expkit.train.checkpoint import (
    TrainCheckpoint,
    open_train_checkpoint,
    restore_train_checkpoint,
    save_train_checkpoint,
)
from expkit.train.config import TrainConfig, TrainRequest
from expkit.train.corpus import Corpus, load_corpus
from expkit.train.distributed import DistContext, all_reduce_mean, init_distributed, shutdown_distributed
from expkit.train.events import CheckReported, Evaluated, RunPlanned, StepLogged, TrainEvent
from expkit.train.loop import StepOutput, TrainingSetup, estimate_val_loss, perplexity, setup_training, train_step
from expkit.train.model import ASCII_VOCAB, CharLMConfig, count_parameters, flops_per_token
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

__all__ = ["Calibration", "CorpusInfo", "MfuEstimate", "TrainResult", "measure_mfu", "train_charlm"]

Check = FirstLossCheck | GradCheck | NonFiniteCheck
DrawSchedule = Callable[[WarmupCosine, Path], "Path | None"]


@dataclass(frozen=True)
class CorpusInfo:
    """The corpus as the run record keeps it: where from, its fingerprint and split sizes (characters)."""

    source: str
    fingerprint: str
    files: int
    split: str
    n_train_chars: int
    n_val_chars: int
    n_non_ascii: int
    non_ascii: str

    @classmethod
    def of(cls, corpus: Corpus) -> CorpusInfo:
        return cls(
            source=corpus.source,
            fingerprint=corpus.fingerprint,
            files=len(corpus.files),
            split=corpus.split,
            n_train_chars=corpus.n_train_chars,
            n_val_chars=corpus.n_val_chars,
            n_non_ascii=corpus.n_non_ascii,
            non_ascii=corpus.non_ascii,
        )


@dataclass(frozen=True)
class MfuEstimate:
    """Model FLOPs utilisation (a fraction of the peak), or None with the reason no peak is known."""

    mfu: float | None
    reason: str | None


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
    corpus: CorpusInfo
    seed: int
    device: str
    world_size: int
    flops_per_token: int
    calibration: Calibration | None

    @property
    def failed_checks(self) -> tuple[Check, ...]:
        """The sanity checks whose verdict is ``fail`` (the NaN guard raises instead of reporting)."""
        return tuple(c for c in self.checks if getattr(c, "verdict", None) == "fail")


def measure_mfu(*, tokens_per_s: float, flops_per_token_: int, device: str) -> MfuEstimate:
    """Model FLOPs utilisation = tokens/s x FLOPs/token / peak FLOP/s, against the bf16 dense peak of the
    GPU registry (``expkit.hardware``). None with the reason on a CPU or an unknown GPU."""
    if not device.startswith("cuda"):
        return MfuEstimate(
            None,
            "no peak FLOP/s is registered for CPUs (the hardware registry lists GPUs); "
            "tokens/s is the figure to compare here",
        )
    from expkit.hardware import find_gpu_for_device

    name = torch.cuda.get_device_name(torch.device(device))
    spec = find_gpu_for_device(name)
    if spec is None:
        return MfuEstimate(None, f"GPU {name!r} is not in the hardware registry")
    return MfuEstimate(tokens_per_s * flops_per_token_ / spec.peak_flop_s, None)


def train_charlm(
    request: TrainRequest | None = None,
    *,
    draw_schedule: DrawSchedule | None = None,
    on_event: Callable[[TrainEvent], None] | None = None,
) -> TrainResult:
    """Train the char LM for ``train_config.max_steps`` steps or ``request.minutes`` of wall time, with checks.

    Args:
        request: what to train, on which corpus and device, for how long, what to record
            (``TrainRequest``; None: every default).
        draw_schedule: ``f(schedule, suggested_path) -> written path``, called before step 1 (C3.6).
        on_event: progress callback (rank 0 only): ``RunPlanned``, ``CheckReported``, ``Evaluated``,
            ``StepLogged`` (``expkit.train.events``).

    Returns:
        TrainResult.

    Raises:
        UsageError: bad device/budget combination, ``seq_len`` > ``block_size``.
        InputError: a corpus too small for one window, a bad or mismatched checkpoint.
        CheckFailed: the NaN guard stopped training (the message names the first non-finite module).

    Example:
        >>> r = train_charlm(TrainRequest(train_config=TrainConfig(max_steps=200), record=False))  # doctest: +SKIP
        >>> r.initial_val_ppl, r.final_val_ppl  # doctest: +SKIP
        (131.9, 9.4)
    """
    wall0 = time.perf_counter()
    request = request or TrainRequest()
    mcfg, tcfg = _checked_configs(request)
    with torch_threads(tcfg.num_threads):  # a process-wide setting: put back when training ends
        corpus = _checked_corpus(request.corpus, tcfg)
        dist = init_distributed(request.device)
        try:
            ckpt = _resume_point(request, mcfg, dist)
            start_step = ckpt.step if ckpt else 0
            setup = setup_training(
                model_config=mcfg,
                train_config=tcfg,
                corpus=corpus,
                seed=request.seed,
                device=dist.device,
                schedule=WarmupCosine(lr_max=tcfg.lr_max, lr_min=tcfg.lr_min, warmup_steps=0, max_steps=1),
                dist=dist,
                start_step=start_step,
            )
            setup.schedule, calibration = _plan_schedule(request, setup, corpus, ckpt, wall0)
            last_step = setup.schedule.max_steps
            if request.stop_at_step is not None:  # stop early although the schedule goes on (to test resume)
                last_step = min(request.stop_at_step, last_step)
            with _open_run(request, setup, corpus, ckpt) as run:
                if ckpt is not None:
                    restore_train_checkpoint(ckpt, model=setup.module, optimizer=setup.optimizer)
                rec = _Records(request, setup, corpus, dist, run, on_event if dist.is_main else None, start_step)
                rec.plan(calibration, last_step, _draw(draw_schedule, setup.schedule, run, dist))
                initial_val = rec.evaluate(start_step)
                end_step, stopped_by = _run_steps(rec, calibration, start_step, last_step)
                final_val = rec.evaluate(end_step)
                rec.save_checkpoint(end_step)
                return rec.result(end_step, stopped_by, (initial_val, final_val), calibration, wall0)
        finally:
            shutdown_distributed(dist)


def _run_steps(rec: _Records, calibration: Calibration | None, start_step: int, last_step: int) -> tuple[int, str]:
    """The seed's loop: step, log, eval, checkpoint, budget. Returns the step reached and why it stopped."""
    setup, cfg = rec.setup, rec.setup.train_config
    stopped_by = "max_steps" if rec.request.stop_at_step is None else "stop_at_step"
    step = start_step
    for step in range(start_step, last_step):
        if cfg.check_zero_grad and step == start_step + 1:  # gradients must be cleared between steps
            rec.check(step, find_stale_grads(setup.module))
        t0 = time.perf_counter()
        out = train_step(setup, step, after_backward=rec.after_backward(step))  # lr, fwd, bwd, clip, step, zero
        logged = (step + 1) % cfg.log_interval == 0 or step in (start_step, last_step - 1)
        loss = float(all_reduce_mean(out.loss, setup.dist)) if logged else None  # .item(): the sync point
        rec.train_s += time.perf_counter() - t0  # optimizer steps only: evals and checkpoints excluded
        if loss is not None:
            rec.log(step, loss, out)
        if (step + 1) % cfg.eval_interval == 0 and step + 1 < last_step:
            rec.evaluate(step + 1)  # val loss every eval_interval steps
        if cfg.checkpoint_interval and (step + 1) % cfg.checkpoint_interval == 0:
            rec.save_checkpoint(step + 1)
        # the budget is a hard cap: steps slower than calibrated (a busier machine) end the run early,
        # before the cosine reaches lr_min; checked every step (every log step under DDP: a collective)
        if (
            calibration is not None
            and (logged or not setup.dist.enabled)
            and over_budget(rec.train_s >= calibration.budget_s and step + 1 < last_step, setup.dist)
        ):
            return step + 1, "time budget (steps ran slower than calibrated; the cosine did not finish)"
    return step + 1, stopped_by


def _checked_configs(request: TrainRequest) -> tuple[CharLMConfig, TrainConfig]:
    """The configs of ``request`` (defaults for None), refused when they cannot train together."""
    mcfg = request.model_config or CharLMConfig()
    tcfg = request.train_config or TrainConfig()
    minutes, device, seed = request.minutes, request.device, request.seed
    if tcfg.seq_len > mcfg.block_size:
        raise UsageError(
            f"seq_len={tcfg.seq_len} exceeds the model's block_size={mcfg.block_size}",
            hint="lower seq_len or raise block_size",
        )
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError(f"device={device!r} but CUDA is not available here", hint="use device 'cpu'")
    if tcfg.max_steps is None and minutes is None and request.resume is None:
        raise UsageError("give a time budget (minutes) or train_config.max_steps")
    if minutes is not None and not (math.isfinite(minutes) and minutes > 0):
        raise UsageError(f"minutes={minutes} must be a finite number > 0", hint="e.g. minutes=1")
    if mcfg.vocab_size < ASCII_VOCAB:
        raise UsageError(
            f"vocab_size={mcfg.vocab_size} is smaller than the {ASCII_VOCAB} ASCII code points the char LM reads",
            hint=f"leave vocab_size at {ASCII_VOCAB} (or raise it)",
        )
    if not 0 <= seed < 2**63:
        raise UsageError(f"seed={seed} must be in [0, 2**63)", hint="e.g. seed=0")
    return mcfg, tcfg


def _checked_corpus(corpus: Corpus | str | Path | None, tcfg: TrainConfig) -> Corpus:
    """The corpus loaded (a path or None: ``load_corpus``), refused when a split cannot fill one window."""
    if not isinstance(corpus, Corpus):
        corpus = load_corpus(corpus)
    for split, ids in (("train", corpus.train), ("val", corpus.val)):
        if ids.numel() < tcfg.seq_len + 1:
            raise InputError(
                f"the {split} split has {ids.numel()} characters, fewer than one window of "
                f"seq_len + 1 = {tcfg.seq_len + 1}",
                path=corpus.source,
                hint="give more text or lower seq_len",
            )
    return corpus


def _resume_point(request: TrainRequest, mcfg: CharLMConfig, dist: DistContext) -> TrainCheckpoint | None:
    """The checkpoint to resume from, verified against this run's model config, seed and world size."""
    if request.resume is None:
        return None
    ckpt = open_train_checkpoint(request.resume, model_config=asdict(mcfg))
    if ckpt.extra.get("world_size", 1) != dist.world_size or ckpt.extra.get("seed") != request.seed:
        raise InputError(
            f"checkpoint was written with seed {ckpt.extra.get('seed')} and world size "
            f"{ckpt.extra.get('world_size')}, this run has seed {request.seed} and world size "
            f"{dist.world_size}: the batch order would differ",
            path=ckpt.path,
            hint="resume with the same seed and number of processes",
        )
    return ckpt


def _plan_schedule(
    request: TrainRequest, setup: TrainingSetup, corpus: Corpus, ckpt: TrainCheckpoint | None, wall0: float
) -> tuple[WarmupCosine, Calibration | None]:
    """The whole schedule, fixed before step 1: the checkpoint's, ``max_steps``, or what fits the budget."""
    tcfg = setup.train_config
    if ckpt is not None:
        try:
            return WarmupCosine(**ckpt.extra["schedule"]), None
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(
                f"the manifest's schedule is missing or malformed ({type(exc).__name__}: {exc})",
                path=ckpt.path / "manifest.json",
            ) from exc
    if tcfg.max_steps is not None:
        warmup = min(tcfg.warmup_steps, tcfg.max_steps)
        return WarmupCosine(lr_max=tcfg.lr_max, lr_min=tcfg.lr_min, warmup_steps=warmup, max_steps=tcfg.max_steps), None
    assert request.minutes is not None  # no max_steps, no resume: _checked_configs required a time budget
    budget_s = request.minutes * 60.0 - (time.perf_counter() - wall0)
    cal = calibrate(setup, corpus, budget_s=budget_s, seed=request.seed)
    return WarmupCosine(
        lr_max=tcfg.lr_max, lr_min=tcfg.lr_min, warmup_steps=tcfg.warmup_steps, max_steps=cal.max_steps
    ), cal


def _open_run(
    request: TrainRequest, setup: TrainingSetup, corpus: Corpus, ckpt: TrainCheckpoint | None
) -> contextlib.AbstractContextManager[Any]:
    """The run record (``expkit.runs``) with this run's config, or nothing with ``record=False``."""
    if not request.record:
        return contextlib.nullcontext(None)
    from expkit.runs.run import start

    config = {
        "model": asdict(setup.model_config),
        "train": asdict(setup.train_config),
        "corpus": asdict(CorpusInfo.of(corpus)),
        "device": setup.device,
        "world_size": setup.dist.world_size,
        "schedule": asdict(setup.schedule),
        "minutes": request.minutes,
        "resumed_from": str(ckpt.path) if ckpt else None,
    }
    return start(config=config, data=list(corpus.paths), seed=request.seed, store=request.store, name=request.name)


def _draw(draw_schedule: DrawSchedule | None, schedule: WarmupCosine, run: Any, dist: DistContext) -> str | None:
    """The schedule as a figure before step 1 (C3.6), kept in the run's artifacts when there is a run."""
    if draw_schedule is None or not dist.is_main:
        return None
    drawn = draw_schedule(schedule, Path(tempfile.mkdtemp(prefix="expkit-schedule-")) / "lr_schedule.png")
    if drawn is None:
        return None
    return str(run.artifact(drawn) if run is not None else drawn)


@dataclass
class _Records:
    """What the run keeps beside the loop: checks, losses, evals, the run log, checkpoints, and events."""

    request: TrainRequest
    setup: TrainingSetup
    corpus: Corpus
    dist: DistContext
    run: Any  # an expkit.runs Run, or None
    on_event: Callable[[TrainEvent], None] | None
    start_step: int
    train_s: float = 0.0
    first_loss: float | None = None
    checkpoint: str | None = None
    schedule_figure: str | None = None
    checks: list[Check] = field(default_factory=list)
    losses: list[tuple[int, float]] = field(default_factory=list)
    val_losses: list[tuple[int, float]] = field(default_factory=list)

    @property
    def owner(self) -> bool:
        """This process writes the run record (rank 0 of a recorded run)."""
        return self.run is not None and self.dist.is_main

    @property
    def tokens_per_step(self) -> int:
        cfg = self.setup.train_config
        return cfg.batch_size * cfg.seq_len * cfg.grad_accum * self.dist.world_size

    def emit(self, event: TrainEvent) -> None:
        if self.on_event is not None:
            self.on_event(event)

    def plan(self, calibration: Calibration | None, last_step: int, schedule_figure: str | None) -> None:
        self.schedule_figure = schedule_figure
        li, start = self.setup.train_config.log_interval, self.start_step
        log_steps = {start, last_step - 1} | {s for s in range(start, last_step) if (s + 1) % li == 0}
        self.emit(
            RunPlanned(
                start_step=start,
                max_steps=self.setup.schedule.max_steps,
                params=count_parameters(self.setup.module),
                schedule=self.setup.schedule,
                calibration=calibration,
                schedule_figure=schedule_figure,
                run_id=self.run.id if self.run is not None else None,
                log_steps=len(log_steps),
            )
        )

    def check(self, step: int, check: Check) -> None:
        self.checks.append(check)
        self.emit(CheckReported(step, check))

    def evaluate(self, step: int) -> float:
        """Validation loss on the fixed windows, with the weights after ``step`` steps."""
        cfg = self.setup.train_config
        v = estimate_val_loss(
            self.setup.model,
            self.corpus.val,
            seq_len=cfg.seq_len,
            n_windows=cfg.eval_windows,
            batch_size=cfg.batch_size * 2,
            device=self.setup.device,
            dist=self.dist,
        )
        self.val_losses.append((step, v))
        if self.owner:
            self.run.log(step, val_loss=v, val_ppl=perplexity(v))
        self.emit(Evaluated(step, self.setup.schedule.max_steps, v, perplexity(v)))
        return v

    def log(self, step: int, loss: float, out: StepOutput) -> None:
        lr = self.setup.schedule.lr_at(step)
        tok_s = (step + 1 - self.start_step) * self.tokens_per_step / self.train_s
        self.losses.append((step, loss))
        if self.owner:
            self.run.log(step, loss=loss, lr=lr, grad_norm=float(out.grad_norm), tokens_per_s=tok_s)
        self.emit(StepLogged(step, self.setup.schedule.max_steps, loss, lr, tok_s))

    def after_backward(self, step: int) -> Callable[[torch.Tensor, torch.Tensor], None]:
        """The checks that need the step's gradients: first loss vs ln(V), gradients everywhere, NaN guard."""
        cfg, dist, module = self.setup.train_config, self.dist, self.setup.module
        nan_check_every = 1 if self.setup.device == "cpu" else cfg.log_interval  # a CPU check costs no sync (C3.7)

        def checks(x: torch.Tensor, loss: torch.Tensor) -> None:
            if step == 0:
                self.first_loss = float(all_reduce_mean(loss, dist))
                if cfg.check_first_loss:
                    self.check(step, check_first_loss(self.first_loss, vocab_size=self.setup.model_config.vocab_size))
            if step == self.start_step and cfg.check_grads:
                self.check(step, find_params_without_grad(module))
            if cfg.nan_guard and step % nan_check_every == 0 and not bool(torch.isfinite(all_reduce_mean(loss, dist))):
                where = locate_first_nonfinite(module, x)  # every rank stops: the mean is the same everywhere
                self.checks.append(where)
                raise CheckFailed(
                    f"loss is {float(loss)} at step {step}: {where.detail}",
                    hint="lower lr_max, check the data, or turn off bf16_autocast",
                )

        return checks

    def save_checkpoint(self, step: int) -> None:
        """A checkpoint after ``step`` steps (rank 0, when there is a checkpoint folder)."""
        request = self.request
        folder = request.checkpoint_dir or (Path(self.run.dir) / "checkpoints" if self.run is not None else None)
        if folder is None or not self.dist.is_main:
            return
        extra = {
            "schedule": asdict(self.setup.schedule),
            "seed": request.seed,
            "world_size": self.dist.world_size,
            "corpus_fingerprint": self.corpus.fingerprint,
        }
        path = save_train_checkpoint(
            folder,
            model=self.setup.module,
            optimizer=self.setup.optimizer,
            step=step,
            model_config=asdict(self.setup.model_config),
            train_config=asdict(self.setup.train_config),
            extra=extra,
        )
        self.checkpoint = str(path)

    def result(
        self,
        end_step: int,
        stopped_by: str,
        val: tuple[float, float],
        calibration: Calibration | None,
        wall0: float,
    ) -> TrainResult:
        """The TrainResult, after the final numbers went to the run log."""
        setup, (initial_val, final_val) = self.setup, val
        steps = end_step - self.start_step
        tok_s = steps * self.tokens_per_step / self.train_s if self.train_s > 0 else math.nan
        fpt = flops_per_token(setup.model_config, seq_len=setup.train_config.seq_len)
        mfu = measure_mfu(tokens_per_s=tok_s, flops_per_token_=fpt, device=setup.device)
        if self.owner:
            final = {"final_val_loss": final_val, "final_val_ppl": perplexity(final_val), "tokens_per_s": tok_s}
            self.run.log(end_step, **final, **({"mfu": mfu.mfu} if mfu.mfu is not None else {}))
        return TrainResult(
            params=count_parameters(setup.module),
            first_loss=self.first_loss,
            ln_vocab=math.log(setup.model_config.vocab_size),
            initial_val_loss=initial_val,
            initial_val_ppl=perplexity(initial_val),
            final_val_loss=final_val,
            final_val_ppl=perplexity(final_val),
            tokens_per_s=tok_s,
            mfu=mfu.mfu,
            mfu_reason=mfu.reason,
            steps=steps,
            start_step=self.start_step,
            tokens=steps * self.tokens_per_step,
            train_s=self.train_s,
            wall_s=time.perf_counter() - wall0,
            stopped_by=stopped_by,
            run_id=self.run.id if self.run is not None else None,
            run_dir=str(self.run.dir) if self.run is not None else None,
            checkpoint=self.checkpoint,
            schedule=setup.schedule,
            schedule_figure=self.schedule_figure,
            checks=tuple(self.checks),
            losses=tuple(self.losses),
            val_losses=tuple(self.val_losses),
            model_config=setup.model_config,
            train_config=setup.train_config,
            corpus=CorpusInfo.of(self.corpus),
            seed=self.request.seed,
            device=setup.device,
            world_size=self.dist.world_size,
            flops_per_token=fpt,
            calibration=calibration,
        )
