"""Benchmark: tokens/s of expkit's loop vs a bare PyTorch loop vs HF Trainer on the same model and batches,
and validation PPL after 60 s of training on the default corpus.

    .venv/bin/python benchmarks/bench_train.py [--steps 30] [--repeats 3] [--seconds 60] [--skip-quality] [--threads N]
        [--quick] [--check] [--out DIR]

``--quick`` (for CI): 3 steps, one repeat, 3 s of quality training, one thread; train.quick.json.

Median of interleaved repeats; the machine is shared, so the load average is printed with the figures.
Writes benchmarks/results/train.json.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from expkit.train import CharLM, CharLMConfig, TrainConfig, TrainRequest, load_corpus, train_charlm
from expkit.train.data import make_loader
from timing import Goal, add_run_options, finish  # benchmarks/timing.py

MCFG = CharLMConfig()


def cfg_for(steps: int) -> TrainConfig:
    return TrainConfig(max_steps=steps, warmup_steps=5, eval_windows=16, log_interval=10, eval_interval=10_000)


def bench_ours(corpus, steps: int, store: Path) -> float:
    r = train_charlm(TrainRequest(model_config=MCFG, train_config=cfg_for(steps), corpus=corpus, seed=0, store=store))
    return r.tokens_per_s


def bench_bare(corpus, steps: int) -> float:
    """The same model, optimizer settings and batches, nothing else: the floor of any wrapper."""
    cfg = cfg_for(steps)
    torch.manual_seed(0)
    model = CharLM(MCFG)
    opt = torch.optim.AdamW(
        model.parameters(), lr=cfg.lr_max, betas=(cfg.beta1, cfg.beta2), weight_decay=cfg.weight_decay
    )
    it = iter(make_loader(corpus.train, block_size=cfg.seq_len, batch_size=cfg.batch_size, seed=0))
    t0 = time.perf_counter()
    for _ in range(steps):
        x, y = next(it)
        loss = F.cross_entropy(model(x).float().view(-1, 128), y.view(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
    loss.item()
    return steps * cfg.batch_size * cfg.seq_len / (time.perf_counter() - t0)


def bench_hf(corpus, steps: int, out: Path) -> float:
    """HF Trainer on the same model (a loss-returning wrapper) and the same windows."""
    from torch.utils.data import Dataset
    from transformers import Trainer, TrainerCallback, TrainingArguments

    cfg = cfg_for(steps)

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.lm = CharLM(MCFG)

        def forward(self, input_ids, labels):
            logits = self.lm(input_ids)
            return {"loss": F.cross_entropy(logits.float().view(-1, 128), labels.view(-1))}

    g = torch.Generator().manual_seed(0)
    offsets = torch.randint(corpus.train.numel() - cfg.seq_len - 1, (steps * cfg.batch_size,), generator=g).tolist()

    class Windows(Dataset):
        def __len__(self):
            return len(offsets)

        def __getitem__(self, i):
            chunk = corpus.train[offsets[i] : offsets[i] + cfg.seq_len + 1].long()
            return {"input_ids": chunk[:-1], "labels": chunk[1:]}

    times: dict[str, float] = {}

    class Clock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            times.setdefault("start", time.perf_counter())

        def on_step_end(self, args, state, control, **kw):
            times["end"] = time.perf_counter()

    args = TrainingArguments(
        output_dir=str(out),
        per_device_train_batch_size=cfg.batch_size,
        max_steps=steps,
        learning_rate=cfg.lr_max,
        lr_scheduler_type="cosine",
        warmup_steps=cfg.warmup_steps,
        weight_decay=cfg.weight_decay,
        adam_beta2=cfg.beta2,
        max_grad_norm=1.0,
        logging_steps=10,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        dataloader_num_workers=0,
        disable_tqdm=True,
        seed=0,
    )
    Trainer(model=Wrapped(), args=args, train_dataset=Windows(), callbacks=[Clock()]).train()
    return steps * cfg.batch_size * cfg.seq_len / (times["end"] - times["start"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=None, help="timed steps per side (default 30; --quick: 3)")
    ap.add_argument("--repeats", type=int, default=None, help="interleaved repeats (default 3; --quick: 1)")
    ap.add_argument("--seconds", type=float, default=None, help="quality training budget (default 60; --quick: 3)")
    ap.add_argument("--skip-quality", action="store_true")
    ap.add_argument(
        "--threads", type=int, default=None, help="torch threads for every side (default: torch's; --quick: 1)"
    )
    add_run_options(ap)
    a = ap.parse_args()
    quick_defaults = {"steps": 3, "repeats": 1, "seconds": 3.0, "threads": 1}
    full_defaults = {"steps": 30, "repeats": 3, "seconds": 60.0, "threads": None}
    for key, value in (quick_defaults if a.quick else full_defaults).items():
        if getattr(a, key) is None:
            setattr(a, key, value)
    if a.threads:
        torch.set_num_threads(a.threads)
    corpus = load_corpus()
    tmp = Path(tempfile.mkdtemp(prefix="bench-train-"))
    res: dict[str, list[float]] = {"ours": [], "bare": [], "hf_trainer": []}
    loads = []
    for rep in range(a.repeats):  # interleaved so load drifts hit all three alike
        res["bare"].append(bench_bare(corpus, a.steps))
        res["ours"].append(bench_ours(corpus, a.steps, tmp / "runs"))
        res["hf_trainer"].append(bench_hf(corpus, a.steps, tmp / f"hf{rep}"))
        loads.append(os.getloadavg()[0])
        print(f"repeat {rep + 1}: " + ", ".join(f"{k} {v[-1]:,.0f} tok/s" for k, v in res.items()), flush=True)
    med = {k: statistics.median(v) for k, v in res.items()}
    out = {
        "steps": a.steps,
        "repeats": a.repeats,
        "tokens_per_s_median": med,
        "tokens_per_s_all": res,
        "overhead_vs_bare": 1 - med["ours"] / med["bare"],
        "ours_vs_hf_trainer": med["ours"] / med["hf_trainer"],
        "load_average_1min": loads,
        "threads": torch.get_num_threads(),
        "note": "shared 2-core machine: other processes ran during the measurement",
    }
    print(
        f"tokens/s (median of {a.repeats}): ours {med['ours']:,.0f}, bare loop {med['bare']:,.0f}, "
        f"HF Trainer {med['hf_trainer']:,.0f}"
    )
    print(
        f"our overhead vs the bare loop: {100 * out['overhead_vs_bare']:+.1f}% (target <= 5%); "
        f"ours / HF Trainer: {out['ours_vs_hf_trainer']:.2f}x (target >= 1.0x); load averages {loads}"
    )
    if not a.skip_quality:
        r = train_charlm(
            TrainRequest(
                corpus=corpus,
                minutes=a.seconds / 60,
                seed=0,
                record=False,
                train_config=TrainConfig(num_threads=a.threads),
            )
        )
        out["quality"] = {
            "seconds": a.seconds,
            "train_s": r.train_s,
            "steps": r.steps,
            "tokens": r.tokens,
            "tokens_per_s": r.tokens_per_s,
            "val_ppl_start": r.initial_val_ppl,
            "val_ppl_end": r.final_val_ppl,
            "load_average_1min": os.getloadavg()[0],
            "config": {
                "batch_size": r.train_config.batch_size,
                "seq_len": r.train_config.seq_len,
                "lr_max": r.train_config.lr_max,
            },
        }
        print(
            f"quality: val PPL {r.initial_val_ppl:.1f} -> {r.final_val_ppl:.2f} after {r.train_s:.0f} s "
            f"({r.steps} steps, {r.tokens_per_s:,.0f} tokens/s, load {os.getloadavg()[0]:.1f}); seed 9.6"
        )
    goals = [
        Goal("our overhead vs the bare loop", out["overhead_vs_bare"], 0.05, "<="),
        Goal("ours / HF Trainer (tokens/s)", out["ours_vs_hf_trainer"], 1.0, ">="),
    ]
    return finish(out, goals, a, "train")


if __name__ == "__main__":
    sys.exit(main())
