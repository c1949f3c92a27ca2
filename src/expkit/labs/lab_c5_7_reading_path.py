"""Lab C5.7: reading down from ``compute_loss`` is the fastest way to learn post-training. One real SFT
step is traced (``sys.setprofile``) and the call chain from ``trainer.train()`` to ``compute_loss``, and
the library calls below it, are printed as the reading path.
"""

from __future__ import annotations

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Shown, judged
from expkit.labs.registry import lab

SEED_PATH = SeedFigure(
    "reading_path",
    "compute_loss is reachable from train() and holds the loss",
    None,
    "",
    "reading down from compute_loss is the fastest way to learn post-training (behaviour)",
)


# what can be shown is the path, not "fastest way to learn" (a claim about readers, not measured here)
READING_PATH = Shown(
    "a traced SFT step runs train() -> ... -> compute_loss, the method that turns a batch into the loss"
)


@lab(id="C5.7", title="The reading path: train() down to compute_loss", claims=("C5.7",), seed=(SEED_PATH,))
def run(ctx: LabContext) -> LabOutput:
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, PrinterCallback
    from trl import SFTConfig, SFTTrainer

    from expkit.finetune.chatdata import generate_chat_examples
    from expkit.finetune.demomodel import ensure_demo_model
    from expkit.finetune.labels import LabelBuilder, load_chat_tokenizer
    from expkit.finetune.tracing import trace_compute_loss
    from expkit.finetune.training import quiet_progress
    from expkit.hardware.threads import torch_threads

    demo = ensure_demo_model(quick=True)  # one step: the small model shows the same path
    tok = load_chat_tokenizer(demo.path)
    builder = LabelBuilder(tok)
    rows = [builder.build(ex) for ex in generate_chat_examples(n=16, seed=ctx.seed + 7)]
    ds = Dataset.from_dict({"input_ids": [list(r.input_ids) for r in rows], "labels": [list(r.labels) for r in rows]})
    args = SFTConfig(
        output_dir=str(ctx.out_dir / "c5_7_trainer"),
        max_steps=1,
        per_device_train_batch_size=4,
        report_to="none",
        save_strategy="no",
        bf16=False,
        gradient_checkpointing=False,
        use_cpu=True,
        disable_tqdm=True,
        logging_steps=1,
    )
    with torch_threads(1), quiet_progress():
        trainer = SFTTrainer(
            model=AutoModelForCausalLM.from_pretrained(demo.path),
            args=args,
            train_dataset=ds,
            processing_class=tok,
            peft_config=LoraConfig(r=8, target_modules="all-linear", task_type="CAUSAL_LM"),
        )
        trainer.remove_callback(PrinterCallback)
        chain = trace_compute_loss(trainer, max_depth=4, max_calls=30)
    up = [s for s in chain.up]
    names = [s.function for s in up]
    ok = bool(up) and names[0].endswith("train") and names[-1].endswith("compute_loss")
    path_text = " -> ".join(f"{s.function} [{s.library}]" for s in up)
    below = [f"{s.depth}: {s.function} [{s.library}: {s.file}:{s.line}]" for s in chain.down]
    measurements = (
        judged(
            "reading_path",
            "trainer.train() reaches compute_loss through the traced frames",
            ok,
            "",
            rule=READING_PATH,
            seed=SEED_PATH,
            detail=path_text,
        ),
        Measurement("frames_up", "frames from train() to compute_loss", len(up), "frames"),
        Measurement(
            "calls_below",
            "distinct trl/transformers/peft calls below compute_loss",
            len(chain.down),
            "calls",
            detail=" | ".join(below[:25]),
        ),
        Measurement("profile_events", "profiler events during the traced step", chain.events, "events"),
    )
    explanation = (
        "One real LoRA SFT step on the demo model, traced with sys.setprofile. The reading path, outermost "
        f"first: {path_text}.\n\n"
        "Below compute_loss (TRL's SFTTrainer.compute_loss), the first library calls in order:\n"
        + "\n".join(below[:25])
        + "\n\n"
        "This shows the reading path exists and where the loss is made; that reading it is the fastest way to "
        "learn post-training is advice about readers, which no run here measures (hence 'demonstrated'). "
        "Read in this order: compute_loss shows which inputs (input_ids, labels with -100 on masked tokens) "
        "become which loss; everything above it is the generic transformers loop (batching, accumulation, "
        "optimizer step), everything below it is the model's forward."
    )
    return LabOutput(measurements=measurements, explanation=explanation)
