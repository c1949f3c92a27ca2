"""LoRA SFT with TRL's ``SFTTrainer`` and PEFT on a local model directory, recorded in the run store.

The labels come from ``expkit.finetune.labels`` (audited before training) and reach TRL as a
tokenized ``input_ids`` + ``labels`` data set, so what was audited is what is trained. After training
the stop-token contract is checked and (by default) fixed in the saved ``generation_config.json``.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from expkit.errors import CheckFailed, InputError, UsageError
from expkit.finetune.chatdata import ChatExample, OnError, read_chat_file
from expkit.finetune.contract import StopContract, enforce_stop_contract
from expkit.finetune.labels import LOSS_MODES, LabelAudit, LabelBuilder, LossMode, audit_labels, load_chat_tokenizer

__all__ = [
    "SFTResult",
    "SFTSettings",
    "lora_target_modules",
    "quiet_progress",
    "train_lora_sft",
    "train_lora_sft_on_file",
]

ALL_LINEAR = "all-linear"


@dataclass(frozen=True)
class SFTSettings:
    """The arguments of one LoRA SFT run (recorded as the run's config).

    Defaults: r = 16, alpha = 32 on every linear layer (the seed's six lines); lr 2e-4 as TRL's LoRA
    examples; ``steps`` optimizer steps of ``batch_size`` examples.
    """

    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    targets: str = ALL_LINEAR
    steps: int = 20
    batch_size: int = 8
    learning_rate: float = 2e-4
    max_length: int | None = 512
    loss: str = "assistant"
    eos_in_loss: bool = True
    packing: bool = False  # TRL's BFD packing of the labelled conversations (labels kept, position ids reset)
    seed: int = 0
    fix_generation_config: bool = True
    merge: bool = False
    num_threads: int | None = None
    lr_scheduler: str = "linear"
    allow_audit_problems: bool = False  # train even when the label audit fails
    allow_dropped: bool = False  # train although the template drops a field of an assistant turn (tool call ...)

    def validate(self) -> None:
        """Raises UsageError naming the field (``steps must be >= 1, not 0``); the CLI names its flag."""
        if self.steps < 1:
            raise UsageError(f"steps must be >= 1, not {self.steps}", hint="train at least one step")
        if self.lora_r < 1:
            raise UsageError(f"lora_r must be >= 1, not {self.lora_r}")
        if self.batch_size < 1:
            raise UsageError(f"batch_size must be >= 1, not {self.batch_size}")
        if not self.learning_rate > 0:
            raise UsageError(f"learning_rate must be > 0, not {self.learning_rate}")
        if self.loss not in LOSS_MODES:
            raise UsageError(f"loss must be one of {', '.join(LOSS_MODES)}, not {self.loss!r}")
        if self.packing and self.max_length is None:
            raise UsageError("packing needs max_length (the packed row length), not None")


@dataclass(frozen=True)
class SFTResult:
    """A finished run: where the adapter is, the loss per step, the audit and the stop-token contract."""

    out_dir: Path
    adapter_dir: Path
    merged_dir: Path | None
    steps: int
    losses: tuple[float, ...]
    first_loss: float
    last_loss: float
    train_s: float
    s_per_step: float
    total_params: int
    trainable_params: int
    examples: int
    masked_fraction: float
    audit_problems: int
    contract: StopContract
    run_id: str | None
    run_dir: Path | None
    settings: SFTSettings = field(default_factory=SFTSettings)
    skipped_lines: dict[int, str] = field(default_factory=dict)  # data file line -> why it was skipped
    rows: int = 0  # rows the trainer got: one per example, plus one per earlier turn trained in a row of its own


def lora_target_modules(model: Any, targets: str) -> list[str] | str:
    """Validate ``targets`` (``all-linear`` or comma-separated module names) against ``model``.

    Raises:
        UsageError: a target that matches no module; the message lists the model's linear module names.
    """
    import torch

    if targets.strip() == ALL_LINEAR:
        return ALL_LINEAR
    wanted = [t.strip() for t in targets.split(",") if t.strip()]
    if not wanted:
        raise UsageError("the LoRA targets are empty", hint=f"give module names like q_proj,v_proj or {ALL_LINEAR}")
    names = [n for n, _ in model.named_modules()]
    linear = sorted({n.rsplit(".", 1)[-1] for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)})
    missing = [t for t in wanted if not any(n == t or n.endswith("." + t) for n in names)]
    if missing:
        raise UsageError(
            f"LoRA target(s) {', '.join(missing)} match no module of the model",
            hint=f"linear modules: {', '.join(linear)} (or {ALL_LINEAR})",
        )
    return wanted


@contextmanager
def quiet_progress() -> Iterator[None]:
    """Turn off the progress bars of datasets ("Tokenizing ...") and transformers ("Loading weights") for the
    block, then restore them: expkit reports progress itself, and a lab's log stays readable."""
    from datasets.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars
    from transformers.utils import logging as hf_logging

    ds_was_off = are_progress_bars_disabled()
    hf_was_on = hf_logging.is_progress_bar_enabled()
    disable_progress_bars()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if not ds_was_off:
            enable_progress_bars()
        if hf_was_on:
            hf_logging.enable_progress_bar()


class _LossRecorder:
    """A transformers TrainerCallback (built lazily) that keeps the loss of every step, logs it to a run,
    and stops training at the first non-finite loss or gradient norm (``diverged_at`` says where)."""

    def __new__(cls, run: Any, on_step: Callable[[int, float], None] | None):
        from transformers import TrainerCallback

        class Recorder(TrainerCallback):
            def __init__(self) -> None:
                self.losses: list[float] = []
                self.diverged_at: str | None = None

            def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001 - transformers' API
                if not logs or "loss" not in logs:
                    return
                # transformers 5 may hand values over as strings ('2.31', 'nan')
                values = {k: float(logs[k]) for k in ("loss", "learning_rate", "grad_norm") if k in logs}
                loss = values.pop("loss")
                self.losses.append(loss)
                if run is not None:
                    run.log(state.global_step, loss=loss, **values)
                if on_step is not None:
                    on_step(state.global_step, loss)
                bad = [(k, v) for k, v in (("loss", loss), *values.items()) if not math.isfinite(v)]
                if bad and self.diverged_at is None:
                    self.diverged_at = f"step {state.global_step}: " + ", ".join(f"{k}={v}" for k, v in bad)
                    control.should_training_stop = True

        return Recorder()


def _open_run(
    settings: SFTSettings, model_dir: Path, data_path: Path | None, store: str | Path | None, record: bool
) -> Any:
    if not record:
        return None
    try:
        from expkit.runs import start
    except ImportError:  # the run store is optional for the library call
        return None
    config = {
        "kind": "lora-sft",
        "model": str(model_dir),
        "data": str(data_path) if data_path else None,
        **asdict(settings),
    }
    data = [str(p) for p in (model_dir, data_path) if p is not None]
    return start(config=config, data=data, seed=settings.seed, store=store, name="sft")


def train_lora_sft(
    *,
    model_dir: str | Path,
    examples: Sequence[ChatExample],
    out_dir: str | Path,
    settings: SFTSettings = SFTSettings(),
    data_path: str | Path | None = None,
    store: str | Path | None = None,
    record: bool = True,
    on_step: Callable[[int, float], None] | None = None,
) -> SFTResult:
    """Audit the labels, then train LoRA adapters with TRL's SFTTrainer and save them.

    Args:
        model_dir: a local checkpoint directory (config, weights, tokenizer with a chat template).
        examples: the training examples (``read_chat_file(...).examples``).
        out_dir: where ``adapter/`` (and ``merged/`` with ``settings.merge``) are written.
        settings: LoRA and training arguments (``allow_audit_problems``: train although the label audit
            fails; with ``eos_in_loss=False`` the untrained stop token is expected, not a problem).
        data_path: the data file, recorded (fingerprinted) in the run store.
        store: run store directory (default ``$EXPKIT_STORE`` or ``./runs``).
        record: record the run (config, data fingerprint, loss per step, adapter) in the run store.
        on_step: called with (step, loss) after each step.

    Returns:
        SFTResult with the loss curve and the stop-token contract of the saved adapter.

    Raises:
        UsageError: bad settings, LoRA targets that match nothing.
        InputError: a model directory without tokenizer or chat template.
        CheckFailed: the label audit failed (the first problem named with its example index), or the
            loss or gradient norm went NaN/inf (training stops there, the run is marked diverged and
            failed, and no adapter is saved).

    Example:
        >>> r = train_lora_sft(model_dir="demo", examples=read_chat_file("train.jsonl").examples, out_dir="sft")
        >>> r.first_loss, r.last_loss  # doctest: +SKIP
        (4.1, 1.2)
    """
    settings.validate()
    model_dir, out_dir = Path(model_dir), Path(out_dir)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    tok = load_chat_tokenizer(model_dir)
    builder = LabelBuilder(
        tok,
        loss=cast(LossMode, settings.loss),  # settings.validate() above checked it is one of LOSS_MODES
        eos_in_loss=settings.eos_in_loss,
        max_length=settings.max_length,
        allow_dropped=settings.allow_dropped,
    )
    audit = audit_labels(tokenizer=tok, examples=examples, builder=builder, show=0)
    expected = {"stop_token_not_trained"} if not settings.eos_in_loss else set()
    real = [p for p in audit.problems if p.check not in expected]
    if real and not settings.allow_audit_problems:
        p = real[0]
        where = f"line {p.line}" if p.line else f"example {p.index}"
        raise CheckFailed(
            f"label audit failed at {where}: {p.check}: {p.message} ({len(real)} problems in all)",
            hint="audit the labels (`expkit sft audit`) to see which tokens are trained",
        )
    # every row: an earlier turn the template renders otherwise as the last turn has a row of its own (labels.py)
    labelled = [row for i, ex in enumerate(examples) for row in builder.build(ex, index=i).rows]
    from expkit.hardware.threads import torch_threads  # imports torch inside the function

    with torch_threads(settings.num_threads), quiet_progress(), warnings.catch_warnings():
        # transformers 5 renamed gradient_checkpointing; TRL's SFTConfig still sets the old name
        warnings.filterwarnings("ignore", category=FutureWarning, message=".*checkpointing.*")
        plan = _Plan(model_dir, out_dir, tok, labelled, audit, settings, Path(data_path) if data_path else None)
        return _train(plan, store=store, record=record, on_step=on_step)


def train_lora_sft_on_file(
    *,
    model_dir: str | Path,
    data_path: str | Path,
    out_dir: str | Path,
    settings: SFTSettings = SFTSettings(),
    on_error: OnError = "raise",
    store: str | Path | None = None,
    record: bool = True,
    on_step: Callable[[int, float], None] | None = None,
) -> SFTResult:
    """``train_lora_sft`` on the examples of a JSONL file (``read_chat_file``); with ``on_error="skip"``
    the result's ``skipped_lines`` says which lines were left out and why.

    Raises:
        UsageError, InputError, CheckFailed: as ``read_chat_file`` and ``train_lora_sft``; the settings
            are validated before the file is read.
    """
    settings.validate()
    chat = read_chat_file(data_path, on_error=on_error)
    result = train_lora_sft(
        model_dir=model_dir,
        examples=chat.examples,
        out_dir=out_dir,
        settings=settings,
        data_path=data_path,
        store=store,
        record=record,
        on_step=on_step,
    )
    return replace(result, skipped_lines=dict(chat.skipped))


@dataclass(frozen=True)
class _Plan:
    """What training needs once the labels are built and audited."""

    model_dir: Path
    out_dir: Path
    tok: Any
    labelled: list
    audit: LabelAudit
    settings: SFTSettings
    data_path: Path | None


def _train(
    plan: _Plan, *, store: str | Path | None, record: bool, on_step: Callable[[int, float], None] | None
) -> SFTResult:
    """Load the model, train the adapters (recorded), refuse a diverged run, save and describe the result."""
    from transformers import AutoModelForCausalLM

    try:
        model = AutoModelForCausalLM.from_pretrained(plan.model_dir, dtype="float32")
    except OSError as exc:
        raise InputError(f"cannot load the model: {exc}", path=plan.model_dir) from None
    targets = lora_target_modules(model, plan.settings.targets)  # refused before a run is opened
    with ExitStack() as stack:
        run = _open_run(plan.settings, plan.model_dir, plan.data_path, store, record)
        if run is not None:
            stack.enter_context(run)  # a failure below marks the run failed, with its traceback
        recorder: Any = _LossRecorder(run, on_step)
        trainer = _sft_trainer(plan, model, targets, recorder)
        t0 = time.perf_counter()
        trainer.train()
        train_s = time.perf_counter() - t0
        if recorder.diverged_at is not None:
            # nothing is saved: an adapter of NaN weights is not a result
            msg = f"training diverged at {recorder.diverged_at}; no adapter was saved"
            if run is not None:
                run.finish("failed", error=msg)
            raise CheckFailed(
                msg,
                hint=f"lower the learning rate (it was {plan.settings.learning_rate:g}) or check the data; "
                "the run record has the loss per step",
            )
        saved = _save_adapter(plan, trainer.model, run)
    losses = tuple(recorder.losses)
    return SFTResult(
        out_dir=plan.out_dir,
        adapter_dir=saved.adapter_dir,
        merged_dir=saved.merged_dir,
        steps=len(losses),
        losses=losses,
        first_loss=losses[0] if losses else float("nan"),
        last_loss=losses[-1] if losses else float("nan"),
        train_s=train_s,
        s_per_step=train_s / max(1, len(losses)),
        total_params=saved.total_params,
        trainable_params=saved.trainable_params,
        examples=plan.audit.examples,
        rows=len(plan.labelled),
        masked_fraction=plan.audit.masked_fraction,
        audit_problems=len(plan.audit.problems),
        contract=saved.contract,
        run_id=getattr(run, "id", None),
        run_dir=getattr(run, "dir", None),
        settings=plan.settings,
    )


def _sft_trainer(plan: _Plan, model: Any, targets: list[str] | str, recorder: Any) -> Any:
    """TRL's SFTTrainer over the audited ``input_ids`` + ``labels``, with LoRA on the validated targets."""
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import PrinterCallback
    from trl import SFTConfig, SFTTrainer

    settings = plan.settings
    dataset = Dataset.from_dict(
        {"input_ids": [list(e.input_ids) for e in plan.labelled], "labels": [list(e.labels) for e in plan.labelled]}
    )
    peft_config = LoraConfig(
        r=settings.lora_r,
        lora_alpha=settings.lora_alpha,
        lora_dropout=settings.lora_dropout,
        target_modules=targets,
        task_type="CAUSAL_LM",
    )
    args = SFTConfig(
        output_dir=str(plan.out_dir / "trainer"),
        max_steps=settings.steps,
        per_device_train_batch_size=settings.batch_size,
        learning_rate=settings.learning_rate,
        lr_scheduler_type=settings.lr_scheduler,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        bf16=False,
        fp16=False,
        gradient_checkpointing=False,
        use_cpu=True,
        seed=settings.seed,
        max_length=settings.max_length,
        # packing: TRL's best-fit decreasing over expkit's input_ids + labels; its padding-free collator keeps the
        # labels, masks each conversation's first label and restarts position ids (tests/finetune/test_packing.py)
        packing=settings.packing,
        packing_strategy="bfd",
        disable_tqdm=True,
        dataloader_num_workers=0,
        logging_nan_inf_filter=False,  # a NaN loss must reach the log, not be averaged away
    )
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=dataset,
        processing_class=plan.tok,
        peft_config=peft_config,
        callbacks=[recorder],
    )
    trainer.remove_callback(PrinterCallback)  # it prints every log dict; the library does not print
    return trainer


@dataclass(frozen=True)
class _Saved:
    adapter_dir: Path
    merged_dir: Path | None
    contract: StopContract
    total_params: int
    trainable_params: int


def _save_adapter(plan: _Plan, peft_model: Any, run: Any) -> _Saved:
    """Save the adapter (and merged model), with the stop-token contract checked and fixed; artifacts to the run."""
    tok, out_dir = plan.tok, plan.out_dir
    adapter_dir = out_dir / "adapter"
    peft_model.save_pretrained(adapter_dir)
    tok.save_pretrained(adapter_dir)
    contract = enforce_stop_contract(
        peft_model.generation_config, end_of_turn=plan.audit.end_of_turn, fix=plan.settings.fix_generation_config
    )
    peft_model.generation_config.save_pretrained(adapter_dir)
    total = sum(p.numel() for p in peft_model.parameters())
    trainable = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
    merged_dir = None
    if plan.settings.merge:
        merged_dir = out_dir / "merged"
        merged = peft_model.merge_and_unload()
        merged.generation_config = peft_model.generation_config
        merged.save_pretrained(merged_dir)
        tok.save_pretrained(merged_dir)
    if run is not None:
        for f in ("adapter_config.json", "adapter_model.safetensors", "generation_config.json"):
            if (adapter_dir / f).is_file():
                run.artifact(adapter_dir / f)
    return _Saved(adapter_dir, merged_dir, contract, total, trainable)
