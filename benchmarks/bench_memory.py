"""Memory estimates side by side: expkit's ledger vs accelerate / HF docs / DeepSpeed conventions, each
against the measured peak of one training step (small configs, CPU allocator), and the time to count
parameters (expkit meta device vs accelerate's init_empty_weights). Prints ratios, writes JSON.

    .venv/bin/python benchmarks/bench_memory.py [--quick] [--check] [--out DIR]

``--quick`` (CI): two small cases (one dense, one mixture-of-experts) and the 0.5B count, seconds in all.
Both forms also time the LoRA count of a 235B-class MoE config (Qwen3-235B-A22B), which must stay < 30 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

from timing import Goal, add_run_options, finish  # benchmarks/timing.py

os.environ.setdefault("KINETO_LOG_LEVEL", "6")  # kineto's USDT lines off, as `labs run` has them
warnings.filterwarnings("ignore")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_options(parser)  # --quick (two small cases) and --out DIR, as every benchmark takes them
    args = parser.parse_args()
    from accelerate.commands.estimate import estimate_training_usage

    from expkit.memory import estimate_training_memory
    from expkit.memory.validation import MOE_CASES, VALIDATION_CASES, validate_ledger

    cases = [c for c in VALIDATION_CASES if c.method == "full" and c.precision == "fp32"]
    if args.quick:
        cases = [cases[0], MOE_CASES[0]]
    table = validate_ledger(cases)
    rows = []
    print("predicted / measured peak of one training step (fp32 full fine-tune, CPU allocator)")
    print(f"{'case':40s} {'measured MiB':>12s} {'expkit':>7s} {'accel.':>7s} {'hf/zero':>7s} {'deepspeed':>9s}")
    for case, r in zip(cases, table.rows, strict=True):
        led = estimate_training_memory(case.training_query("cpu"))
        P = led.total_params
        accel = max(estimate_training_usage(4 * P, "float32").values())  # its "Training using Adam" peak
        hf = 16 * P  # fp32: weights 4 + grads 4 + AdamW 8 (HF docs), no activations
        ds = 4 * P + 16 * P  # DeepSpeed ZeRO-2 estimator on 1 GPU
        m = r.measured_peak_bytes
        row = dict(
            case=case.name,
            measured=m,
            expkit=r.predicted_peak_bytes / m,
            accelerate=accel / m,
            hf=hf / m,
            deepspeed=ds / m,
        )
        rows.append(row)
        print(
            f"{case.name[:40]:40s} {m / 2**20:12.2f} {row['expkit']:7.3f} {row['accelerate']:7.3f} {row['hf']:7.3f} "
            f"{row['deepspeed']:9.3f}"
        )

    # counting parameters: meta device (expkit) vs accelerate's init_empty_weights
    from accelerate import init_empty_weights
    from transformers import AutoConfig, AutoModelForCausalLM

    from expkit.models import load_model_description
    from expkit.models.counting import build_meta_model, count_model

    def hf_config(desc):  # noqa: ANN001, ANN202
        raw = {k: v for k, v in desc.raw.items() if k not in ("model_type", "architectures", "transformers_version")}
        return AutoConfig.for_model(desc.model_type, **raw)

    big = load_model_description("qwen2.5-0.5b" if args.quick else "qwen2.5-72b")
    t_ours, t_acc = [], []
    for _ in range(1 if args.quick else 3):
        t0 = time.perf_counter()
        n_ours = sum(p.numel() for p in build_meta_model(big).parameters())
        t_ours.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        with init_empty_weights():
            n_acc = sum(p.numel() for p in AutoModelForCausalLM.from_config(hf_config(big)).parameters())
        t_acc.append(time.perf_counter() - t0)
    small = load_model_description("qwen2.5-0.5b")
    with init_empty_weights():
        n_acc_small = sum(p.numel() for p in AutoModelForCausalLM.from_config(hf_config(small)).parameters())
    n_ours_small = sum(p.numel() for p in build_meta_model(small).parameters())
    t0 = time.perf_counter()
    moe = count_model(load_model_description("qwen3-235b-a22b"), lora_r=16)
    t_moe = time.perf_counter() - t0
    timing = dict(
        model=big.name,
        expkit_s=statistics.median(t_ours),
        accelerate_s=statistics.median(t_acc),
        params=n_ours,
        params_accelerate=n_acc,
        params_05b=n_ours_small,
        params_05b_accelerate=n_acc_small,
        moe_235b_lora_count_s=t_moe,
        moe_235b_adapter_params=moe.adapter_params,
    )
    print(
        f"\ncount {big.name}: expkit meta {timing['expkit_s']:.2f} s, accelerate init_empty_weights "
        f"{timing['accelerate_s']:.2f} s (ratio {timing['accelerate_s'] / timing['expkit_s']:.2f}); "
        f"counts {n_ours:,} vs {n_acc:,}"
    )
    print(f"count Qwen2.5-0.5B (tied): expkit {n_ours_small:,}, accelerate {n_acc_small:,}")
    print(
        f"Qwen3-235B-A22B LoRA r=16 (peft per layer kind): {moe.adapter_params:,} adapters in {t_moe:.1f} s "
        f"(limit 30 s: {'met' if t_moe < 30 else 'NOT met'})"
    )
    print("(median of 3; the machine was shared with other work)" if not args.quick else "(quick: one run)")
    goals = [
        Goal("Qwen3-235B-A22B LoRA count (s)", t_moe, 30.0, "<=", quick=True),  # the same count in both forms
        Goal(f"{big.name} params, expkit - accelerate", abs(n_ours - n_acc), 0, "<=", quick=True),
        Goal("Qwen2.5-0.5B params, expkit - accelerate", abs(n_ours_small - n_acc_small), 0, "<=", quick=True),
    ]
    return finish({"peak_ratios": rows, "count_timing": timing}, goals, args, "memory")


if __name__ == "__main__":
    sys.exit(main())
