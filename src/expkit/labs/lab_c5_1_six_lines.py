"""Lab C5.1: six libraries, six lines. The LoRA SFT of the seed written with the stock APIs (no expkit in
between), run on the demo model, each line timed and mapped to the line of the 20-line loop it wraps.
"""

from __future__ import annotations

import time

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Verdict
from expkit.labs.registry import lab

SEED_SIX_LINES = SeedFigure("six_lines_run", "six lines assemble a LoRA SFT", None, "",
                            "six libraries, six lines; each maps to a line of the 20-line loop (behaviour)")

# (library, the line as written, the concept of the 20-line loop it wraps)
SIX_LINES = (
    ("tokenizers + Hub", "tok = AutoTokenizer.from_pretrained(model_dir)",
     "encode = lambda s: [stoi[c] for c in s]  (text -> ids; the Hub resolves the files)"),
    ("transformers", "model = AutoModelForCausalLM.from_pretrained(model_dir)", "model = GPT(config)"),
    ("datasets", 'ds = load_dataset("json", data_files=train_jsonl)["train"]', "x, y = get_batch('train')"),
    ("peft", 'lora = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM")',
     "optimizer = AdamW(params)  (which parameters train)"),
    ("trl", "trainer = SFTTrainer(model=model, args=SFTConfig(assistant_only_loss=True, ...), "
            "train_dataset=ds, processing_class=tok, peft_config=lora)",
     "loss = F.cross_entropy(logits, y, ignore_index=-100)  (labels from the chat template)"),
    ("trl / accelerate", "trainer.train()",
     "for step: logits = model(x); loss.backward(); optimizer.step(); optimizer.zero_grad()"),
)


@lab(id="C5.1", title="Six libraries, six lines: a LoRA SFT", claims=("C5.1",), seed=(SEED_SIX_LINES,))
def run(ctx: LabContext) -> LabOutput:
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from datasets import load_dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback
    from trl import SFTConfig, SFTTrainer

    from expkit.finetune.chatdata import generate_chat_examples, write_chat_jsonl
    from expkit.finetune.demomodel import ensure_demo_model
    from expkit.train.threads import torch_threads
    from expkit.finetune.training import quiet_progress

    demo = ensure_demo_model(quick=ctx.quick)
    model_dir = str(demo.path)
    steps = 10 if ctx.quick else 30
    train_jsonl = str(write_chat_jsonl(generate_chat_examples(n=200, seed=ctx.seed + 11),
                                       ctx.figure_path("c5_1_train.jsonl")))
    elapsed: list[float] = []
    with torch_threads(1), quiet_progress():
        t = time.perf_counter()
        tok = AutoTokenizer.from_pretrained(model_dir)
        elapsed.append(time.perf_counter() - t); t = time.perf_counter()
        model = AutoModelForCausalLM.from_pretrained(model_dir)
        elapsed.append(time.perf_counter() - t); t = time.perf_counter()
        ds = load_dataset("json", data_files=train_jsonl, cache_dir=str(ctx.out_dir / "hf-datasets"))["train"]
        elapsed.append(time.perf_counter() - t); t = time.perf_counter()
        lora = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM")
        elapsed.append(time.perf_counter() - t); t = time.perf_counter()
        args = SFTConfig(output_dir=str(ctx.out_dir / "c5_1_trainer"), assistant_only_loss=True, max_steps=steps,
                         per_device_train_batch_size=8, learning_rate=2e-3, logging_steps=1, report_to="none",
                         save_strategy="no", bf16=False, gradient_checkpointing=False, use_cpu=True,
                         disable_tqdm=True, seed=ctx.seed)
        trainer = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tok, peft_config=lora)
        trainer.remove_callback(PrinterCallback)
        elapsed.append(time.perf_counter() - t); t = time.perf_counter()
        out = trainer.train()
        elapsed.append(time.perf_counter() - t)
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    peft_model = trainer.model
    trainable = sum(p.numel() for p in peft_model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in peft_model.parameters())
    first_labels = trainer.train_dataset[0]["labels"]
    trained_first = sum(1 for x in first_labels if x != -100)
    ran = len(losses) == steps and losses[-1] < losses[0]
    table = "; ".join(f"{lib}: `{line.split(' = ')[0]}` ({dt:.2f} s) -> {concept}"
                      for (lib, line, concept), dt in zip(SIX_LINES, elapsed))
    measurements = (
        Measurement("six_lines_run", "the six lines ran and the loss fell", ran, "",
                    Verdict("reproduced") if ran else Verdict("not reproduced", f"losses {losses[:1]} -> {losses[-1:]}"),
                    SEED_SIX_LINES, detail=table),
        Measurement("loss_first", "loss at step 1", losses[0], "nats"),
        Measurement("loss_last", f"loss at step {len(losses)}", losses[-1], "nats"),
        Measurement("s_per_step", "seconds per step (trainer.train() / steps)", elapsed[-1] / steps, "s",
                    detail=f"TRL reports {out.metrics.get('train_runtime', float('nan')):.2f} s train runtime"),
        Measurement("trainable_fraction", "trainable / all parameters (base + LoRA)", 100 * trainable / total, "%",
                    detail=f"{trainable:,} of {total:,}"),
        Measurement("trained_tokens_first", "tokens in the loss, first example (assistant_only_loss)",
                    trained_first, "tokens", detail=f"of {len(first_labels)}"),
    )
    explanation = (
        "The seed's six lines, written with the stock APIs and run offline on the demo model: "
        + " | ".join(f"{lib}: {line}" for lib, line, _ in SIX_LINES) + ".\n\n"
        "Each wraps one line of the 20-line training loop of chapter 3: " + table + ". "
        f"{steps} steps took {elapsed[-1]:.1f} s ({elapsed[-1] / steps:.3f} s/step on one thread of this shared "
        f"CPU); the loss went {losses[0]:.2f} -> "
        f"{losses[-1]:.2f}. assistant_only_loss=True works because the demo template has "
        "{% generation %} markers around the assistant content and its <|im_end|>."
    )
    return LabOutput(measurements=measurements, explanation=explanation)
