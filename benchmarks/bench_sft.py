"""Benchmark the finetune stage against plain TRL, side by side in one run, on the demo model.

1. 20 LoRA steps on the (full) demo model through ``expkit.finetune.train_lora_sft`` (target: <= 60 s).
2. expkit's wrapper (label audit + tokenized labels + run record + contract) vs plain TRL
   (``SFTTrainer`` on the messages with ``assistant_only_loss=True``) on the same model, data and
   arguments, interleaved, median of repeats: end to end (load, prepare, train, save) and train() alone.
3. The label audit of 10,000 conversations (target: <= 30 s).

    .venv/bin/python benchmarks/bench_sft.py [--repeats 3] [--steps 20] [--quick] [--out DIR]

``--quick`` (for CI): the quick demo model, 2 steps, one repeat, no warm-up, an audit of 200 conversations;
sft.quick.json. Prints ratios and writes benchmarks/results/sft.json. The machine may be shared: read the times with
the load average printed beside them. Both sides run with one torch thread.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import warnings
from pathlib import Path

from timing import add_run_options, write_results  # benchmarks/timing.py

os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore")


def plain_trl(model_dir: Path, train_jsonl: Path, out: Path, steps: int, seed: int) -> tuple[float, float]:
    """The seed's six lines with the same arguments as expkit; returns (end-to-end s, train() s)."""
    from datasets import load_dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback
    from trl import SFTConfig, SFTTrainer

    t0 = time.perf_counter()
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype="float32")
    ds = load_dataset("json", data_files=str(train_jsonl), cache_dir=str(out / "hf"))["train"]
    args = SFTConfig(
        output_dir=str(out / "trainer"),
        max_steps=steps,
        per_device_train_batch_size=8,
        learning_rate=2e-4,
        lr_scheduler_type="linear",
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        bf16=False,
        fp16=False,
        gradient_checkpointing=False,
        use_cpu=True,
        seed=seed,
        max_length=512,
        disable_tqdm=True,
        assistant_only_loss=True,
    )
    lora = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules="all-linear", task_type="CAUSAL_LM")
    trainer = SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tok, peft_config=lora)
    trainer.remove_callback(PrinterCallback)
    t1 = time.perf_counter()
    trainer.train()
    t2 = time.perf_counter()
    trainer.model.save_pretrained(out / "adapter")
    return time.perf_counter() - t0, t2 - t1


def expkit_sft(model_dir: Path, examples, train_jsonl: Path, out: Path, steps: int, seed: int) -> tuple[float, float]:
    from expkit.finetune.training import SFTSettings, train_lora_sft

    t0 = time.perf_counter()
    r = train_lora_sft(
        model_dir=model_dir,
        examples=examples,
        out_dir=out,
        data_path=train_jsonl,
        settings=SFTSettings(steps=steps, seed=seed),
        store=out / "runs",
    )
    return time.perf_counter() - t0, r.train_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=None, help="interleaved repeats (default 3; --quick: 1)")
    ap.add_argument("--steps", type=int, default=None, help="LoRA steps per run (default 20; --quick: 2)")
    add_run_options(ap)
    a = ap.parse_args()
    a.repeats = a.repeats if a.repeats is not None else (1 if a.quick else 3)
    a.steps = a.steps if a.steps is not None else (2 if a.quick else 20)
    n_audit = 200 if a.quick else 10_000

    import datasets
    import torch
    import transformers

    torch.set_num_threads(1)
    datasets.disable_progress_bars()
    transformers.logging.set_verbosity_error()
    from expkit.finetune.chatdata import generate_chat_examples, read_chat_file, write_chat_jsonl
    from expkit.finetune.demomodel import ensure_demo_model
    from expkit.finetune.labels import audit_labels, load_chat_tokenizer

    t = time.perf_counter()
    demo = ensure_demo_model(quick=a.quick)
    build_s = time.perf_counter() - t
    tmp = Path(tempfile.mkdtemp(prefix="bench_sft_"))
    train_jsonl = write_chat_jsonl(generate_chat_examples(n=400, seed=1), tmp / "train.jsonl")
    examples = read_chat_file(train_jsonl).examples
    if not a.quick:  # warm-up: imports and first-call costs out of the comparison
        expkit_sft(demo.path, examples, train_jsonl, tmp / "warm_e", 2, 0)
        plain_trl(demo.path, train_jsonl, tmp / "warm_p", 2, 0)
    runs: dict[str, list[tuple[float, float]]] = {"expkit": [], "trl": []}
    for i in range(a.repeats):
        runs["expkit"].append(expkit_sft(demo.path, examples, train_jsonl, tmp / f"e{i}", a.steps, 0))
        runs["trl"].append(plain_trl(demo.path, train_jsonl, tmp / f"p{i}", a.steps, 0))
    med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for k, v in runs.items()}

    tok = load_chat_tokenizer(demo.path)
    big = generate_chat_examples(n=n_audit, seed=2)
    t = time.perf_counter()
    audit = audit_labels(tokenizer=tok, examples=big, show=0)
    audit_s = time.perf_counter() - t

    load = os.getloadavg()
    result = {
        "model_parameters": demo.parameters,
        "demo_model_build_s": build_s,
        "demo_model_cached": demo.cached,
        "steps": a.steps,
        "repeats": a.repeats,
        "expkit_end_to_end_s": med["expkit"][0],
        "expkit_train_s": med["expkit"][1],
        "trl_end_to_end_s": med["trl"][0],
        "trl_train_s": med["trl"][1],
        "ratio_end_to_end": med["expkit"][0] / med["trl"][0],
        "ratio_train": med["expkit"][1] / med["trl"][1],
        "s_per_step_expkit": med["expkit"][1] / a.steps,
        "s_per_step_trl": med["trl"][1] / a.steps,
        "audit_conversations": n_audit,
        "audit_s": audit_s,
        "audit_masked_fraction": audit.masked_fraction,
        "loadavg_1m": load[0],
        "cpu_count": os.cpu_count(),
        "threads": 1,
        "raw": {k: v for k, v in runs.items()},
    }
    print(f"demo model: {demo.parameters:,} parameters ({'cached' if demo.cached else f'built in {build_s:.0f} s'})")
    print(
        f"{a.steps} LoRA steps, median of {a.repeats} (1 thread; load average {load[0]:.1f} on "
        f"{os.cpu_count()} cores, shared machine):"
    )
    print(
        f"  expkit sft : {med['expkit'][0]:6.2f} s end to end, train() {med['expkit'][1]:6.2f} s "
        f"({med['expkit'][1] / a.steps:.3f} s/step)   target: 20 steps <= 60 s"
    )
    print(
        f"  plain TRL  : {med['trl'][0]:6.2f} s end to end, train() {med['trl'][1]:6.2f} s "
        f"({med['trl'][1] / a.steps:.3f} s/step)"
    )
    print(
        f"  ratio expkit / TRL: end to end {result['ratio_end_to_end']:.3f}, train() {result['ratio_train']:.3f}"
        "   target: within 5%"
    )
    print(
        f"label audit of {n_audit:,} conversations: {audit_s:.2f} s (target for 10,000: <= 30 s); "
        f"masked {audit.masked_fraction:.1%}"
    )
    write_results(result, a.out, "sft", quick=a.quick)


if __name__ == "__main__":
    main()
