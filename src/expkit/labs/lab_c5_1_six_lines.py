"""Lab C5.1: six libraries, six lines. The LoRA SFT of the seed written with the stock APIs (no expkit in
between), run on the demo model, each line timed, and each line checked to do the job of the line of the
20-line loop it is mapped to (the mapping is tested by behaviour, not asserted by a table).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Shown, judged
from expkit.labs.registry import lab

SEED_SIX_LINES = SeedFigure(
    "lines_mapped",
    "six lines assemble a LoRA SFT",
    None,
    "",
    "six libraries, six lines; each maps to a line of the 20-line loop (behaviour)",
)

# (library, the line as written, the concept of the 20-line loop it wraps)
SIX_LINES = (
    (
        "tokenizers + Hub",
        "tok = AutoTokenizer.from_pretrained(model_dir)",
        "encode = lambda s: [stoi[c] for c in s]  (text -> ids; the Hub resolves the files)",
    ),
    ("transformers", "model = AutoModelForCausalLM.from_pretrained(model_dir)", "model = GPT(config)"),
    ("datasets", 'ds = load_dataset("json", data_files=train_jsonl)["train"]', "x, y = get_batch('train')"),
    (
        "peft",
        'lora = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM")',
        "optimizer = AdamW(params)  (which parameters train)",
    ),
    (
        "trl",
        "trainer = SFTTrainer(model=model, args=SFTConfig(assistant_only_loss=True, ...), "
        "train_dataset=ds, processing_class=tok, peft_config=lora)",
        "loss = F.cross_entropy(logits, y, ignore_index=-100)  (labels from the chat template)",
    ),
    (
        "trl / accelerate",
        "trainer.train()",
        "for step: logits = model(x); loss.backward(); optimizer.step(); optimizer.zero_grad()",
    ),
)


MAPPED = Shown("each of the six lines did the job of the loop line it maps to, checked in this run")


@dataclass(frozen=True)
class SixLinesRun:
    """What the six lines' run left to check: the tokenizer, the trainer (its model is the peft model), one batch
    of its loader, the steps asked and the optimizer steps counted, the weights before training (base and LoRA,
    by name) and the logged losses."""

    tok: Any
    trainer: Any
    batch: Any
    steps: int
    optimizer_steps: int
    base_before: dict[str, Any]
    lora_before: dict[str, Any]
    losses: list[float]


def check_mapping(run: SixLinesRun) -> list[tuple[bool, str]]:
    """For each of the six lines, whether its object did the job of the loop line it maps to, and what was seen."""
    import torch
    import torch.nn.functional as F

    tok, trainer, batch, steps, losses = run.tok, run.trainer, run.batch, run.steps, run.losses
    optimizer_steps, base_before, lora_before = run.optimizer_steps, run.base_before, run.lora_before

    ids = tok("what is 2 + 3?")["input_ids"]
    enc_ok = bool(ids) and all(isinstance(i, int) for i in ids) and "2 + 3" in tok.decode(ids)
    peft_model = trainer.model
    with torch.no_grad():
        logits = peft_model(input_ids=torch.tensor([ids])).logits
    vocab = peft_model.config.vocab_size
    model_ok = tuple(logits.shape) == (1, len(ids), vocab)
    labels = batch["labels"]
    batch_ok = labels.shape == batch["input_ids"].shape and labels.shape[0] == trainer.args.per_device_train_batch_size
    trainable = [n for n, p in peft_model.named_parameters() if p.requires_grad]
    lora_ok = bool(trainable) and all("lora_" in n for n in trainable)
    # the trainer's loss is cross-entropy of the shifted logits against labels with -100 ignored
    peft_model.eval()
    with torch.no_grad():
        inputs = {k: v for k, v in batch.items() if k in ("input_ids", "attention_mask", "labels")}
        trl_loss = trainer.compute_loss(peft_model, dict(inputs))
        lg = peft_model(input_ids=batch["input_ids"], attention_mask=batch.get("attention_mask")).logits
        by_hand = F.cross_entropy(lg[:, :-1].reshape(-1, vocab).float(), labels[:, 1:].reshape(-1), ignore_index=-100)
    peft_model.train()
    masked = int((labels == -100).sum())
    loss_ok = masked > 0 and abs(float(trl_loss) - float(by_hand)) <= 1e-4 * max(1.0, abs(float(by_hand)))
    base_same = all(torch.equal(p, base_before[n]) for n, p in peft_model.named_parameters() if n in base_before)
    lora_moved = any(not torch.equal(p, lora_before[n]) for n, p in peft_model.named_parameters() if n in lora_before)
    loop_ok = optimizer_steps == steps and base_same and lora_moved and losses[-1] < losses[0]
    return [
        (enc_ok, f"tokenizer: text -> {len(ids)} int ids, decoded back"),
        (model_ok, f"model: ids (1, {len(ids)}) -> logits {tuple(logits.shape)}"),
        (batch_ok, f"dataset: the trainer's loader gives a batch {tuple(batch['input_ids'].shape)} with labels"),
        (lora_ok, f"LoraConfig: {len(trainable)} trainable tensors, all lora_*: it chose what the optimizer updates"),
        (
            loss_ok,
            f"SFTTrainer: its loss {float(trl_loss):.5f} = cross_entropy(shifted logits, labels, "
            f"ignore_index=-100) {float(by_hand):.5f}; {masked} of {labels.numel()} labels are -100",
        ),
        (
            loop_ok,
            f"train(): {optimizer_steps} optimizer.step() calls for {steps} steps, base weights unchanged "
            f"({base_same}), adapters moved ({lora_moved}), loss {losses[0]:.2f} -> {losses[-1]:.2f}",
        ),
    ]


@lab(id="C5.1", title="Six libraries, six lines: a LoRA SFT", claims=("C5.1",), seed=(SEED_SIX_LINES,))
def run(ctx: LabContext) -> LabOutput:
    import os
    from typing import cast

    import torch

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from datasets import load_dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback
    from trl import SFTConfig, SFTTrainer

    from expkit.finetune.chatdata import generate_chat_examples, write_chat_jsonl
    from expkit.finetune.demomodel import ensure_demo_model
    from expkit.finetune.training import quiet_progress
    from expkit.hardware.threads import torch_threads

    demo = ensure_demo_model(quick=ctx.quick)
    model_dir = str(demo.path)
    steps = 10 if ctx.quick else 30
    train_jsonl = str(
        write_chat_jsonl(generate_chat_examples(n=200, seed=ctx.seed + 11), ctx.figure_path("c5_1_train.jsonl"))
    )
    elapsed: list[float] = []
    with torch_threads(1), quiet_progress():
        t = time.perf_counter()
        tok = AutoTokenizer.from_pretrained(model_dir)
        elapsed.append(time.perf_counter() - t)
        t = time.perf_counter()
        model = AutoModelForCausalLM.from_pretrained(model_dir)
        elapsed.append(time.perf_counter() - t)
        t = time.perf_counter()
        ds = load_dataset("json", data_files=train_jsonl, cache_dir=str(ctx.out_dir / "hf-datasets"))["train"]
        elapsed.append(time.perf_counter() - t)
        t = time.perf_counter()
        lora = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM")
        elapsed.append(time.perf_counter() - t)
        t = time.perf_counter()
        args = SFTConfig(
            output_dir=str(ctx.out_dir / "c5_1_trainer"),
            assistant_only_loss=True,
            max_steps=steps,
            per_device_train_batch_size=8,
            learning_rate=2e-3,
            logging_steps=1,
            report_to="none",
            save_strategy="no",
            bf16=False,
            gradient_checkpointing=False,
            use_cpu=True,
            disable_tqdm=True,
            seed=ctx.seed,
        )
        trainer = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tok, peft_config=lora)
        trainer.remove_callback(PrinterCallback)
        elapsed.append(time.perf_counter() - t)
        batch = next(iter(trainer.get_train_dataloader()))  # what x, y = get_batch() becomes
        named = dict(cast("torch.nn.Module", trainer.model).named_parameters())
        base_before = {
            n: p.detach().clone() for n, p in named.items() if not p.requires_grad and "lora_" not in n and p.dim() == 2
        }
        lora_before = {n: p.detach().clone() for n, p in named.items() if p.requires_grad}
        step_calls = [0]
        trainer.create_optimizer().register_step_post_hook(lambda *a: step_calls.__setitem__(0, step_calls[0] + 1))
        t = time.perf_counter()
        out = trainer.train()
        elapsed.append(time.perf_counter() - t)
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    peft_model = trainer.model
    assert peft_model is not None, "the trainer was built with model=model"
    trainable = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in peft_model.parameters())
    assert trainer.train_dataset is not None, "the trainer was built with train_dataset=ds"
    first_labels = trainer.train_dataset[0]["labels"]
    trained_first = sum(1 for x in first_labels if x != -100)
    checks = check_mapping(
        SixLinesRun(
            tok=tok,
            trainer=trainer,
            batch=batch,
            steps=steps,
            optimizer_steps=step_calls[0],
            base_before=base_before,
            lora_before=lora_before,
            losses=losses,
        )
    )
    n_ok = sum(ok for ok, _ in checks)
    table = "; ".join(
        f"{lib}: `{line.split(' = ')[0]}` ({dt:.2f} s) -> {concept}"
        for (lib, line, concept), dt in zip(SIX_LINES, elapsed, strict=True)
    )
    seen = "; ".join(f"{'ok' if ok else 'FAILED'}: {what}" for ok, what in checks)
    measurements = (
        judged(
            "lines_mapped",
            "all six lines did their loop line's job (checked by behaviour)",
            n_ok == len(checks),
            "",
            rule=MAPPED,
            seed=SEED_SIX_LINES,
            detail=seen,
        ),
        Measurement("lines_ok", "lines whose mapping held", n_ok, "lines", detail=f"of {len(checks)}"),
        Measurement("loss_first", "loss at step 1", losses[0], "nats"),
        Measurement("loss_last", f"loss at step {len(losses)}", losses[-1], "nats"),
        Measurement(
            "s_per_step",
            "seconds per step (trainer.train() / steps)",
            elapsed[-1] / steps,
            "s",
            detail=f"TRL reports {out.metrics.get('train_runtime', float('nan')):.2f} s train runtime",
        ),
        Measurement(
            "trainable_fraction",
            "trainable / all parameters (base + LoRA)",
            100 * trainable / total,
            "%",
            detail=f"{trainable:,} of {total:,}",
        ),
        Measurement(
            "trained_tokens_first",
            "tokens in the loss, first example (assistant_only_loss)",
            trained_first,
            "tokens",
            detail=f"of {len(first_labels)}",
        ),
    )
    explanation = (
        "The seed's six lines, written with the stock APIs and run offline on the demo model: "
        + " | ".join(f"{lib}: {line}" for lib, line, _ in SIX_LINES)
        + ".\n\n"
        "Each wraps one line of the 20-line training loop of chapter 3: " + table + ". Each mapping was checked by "
        f"what the line's object did in this run ({n_ok} of 6 held): " + seen + ". "
        f"{steps} steps took {elapsed[-1]:.1f} s ({elapsed[-1] / steps:.3f} s/step on one thread of this shared "
        f"CPU); the loss went {losses[0]:.2f} -> "
        f"{losses[-1]:.2f}. assistant_only_loss=True works because the demo template has "
        "{% generation %} markers around the assistant content and its <|im_end|>."
    )
    return LabOutput(measurements=measurements, explanation=explanation)
