"""Memory estimates side by side: expkit's ledger vs accelerate / HF docs / DeepSpeed conventions, each
against the measured peak of one training step (small configs, CPU allocator), and the time to count
parameters (expkit meta device vs accelerate's init_empty_weights). Prints ratios, writes JSON.

    .venv/bin/python benchmarks/bench_memory.py
"""

from __future__ import annotations

import json
import statistics
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")


def main() -> None:
    from accelerate.commands.estimate import estimate_training_usage

    from expkit.memory import estimate_training_memory
    from expkit.memory.validation import VALIDATION_CASES, validate_ledger

    cases = [c for c in VALIDATION_CASES if c.method == "full" and c.precision == "fp32"]
    table = validate_ledger(cases)
    rows = []
    print("predicted / measured peak of one training step (fp32 full fine-tune, CPU allocator)")
    print(f"{'case':34s} {'measured MiB':>12s} {'expkit':>7s} {'accel.':>7s} {'hf/zero':>7s} {'deepspeed':>9s}")
    for case, r in zip(cases, table.rows):
        led = estimate_training_memory(case.spec(), seq=case.seq, precision="fp32", grad_ckpt=case.grad_ckpt,
                                       attention=case.attention, device="cpu")
        P = led.total_params
        accel = max(estimate_training_usage(4 * P, "float32").values())  # its "Training using Adam" peak
        hf = 16 * P  # fp32: weights 4 + grads 4 + AdamW 8 (HF docs), no activations
        ds = 4 * P + 16 * P  # DeepSpeed ZeRO-2 estimator on 1 GPU
        m = r.measured_peak_bytes
        row = dict(case=case.name, measured=m, expkit=r.predicted_peak_bytes / m, accelerate=accel / m, hf=hf / m,
                   deepspeed=ds / m)
        rows.append(row)
        print(f"{case.name:34s} {m / 2**20:12.2f} {row['expkit']:7.3f} {row['accelerate']:7.3f} {row['hf']:7.3f} "
              f"{row['deepspeed']:9.3f}")

    # counting parameters: meta device (expkit) vs accelerate's init_empty_weights, Qwen2.5-72B config
    from accelerate import init_empty_weights
    from transformers import AutoModelForCausalLM

    from expkit.memory.architecture import load_model_spec
    from expkit.memory.params import _hf_config, build_meta_model

    spec = load_model_spec("qwen2.5-72b")
    cfg = _hf_config(spec)
    t_ours, t_acc = [], []
    for _ in range(3):
        t0 = time.perf_counter()
        n_ours = sum(p.numel() for p in build_meta_model(spec).parameters())
        t_ours.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        with init_empty_weights():
            n_acc = sum(p.numel() for p in AutoModelForCausalLM.from_config(cfg).parameters())
        t_acc.append(time.perf_counter() - t0)
    small = load_model_spec("qwen2.5-0.5b")
    with init_empty_weights():
        n_acc_small = sum(p.numel() for p in AutoModelForCausalLM.from_config(_hf_config(small)).parameters())
    n_ours_small = sum(p.numel() for p in build_meta_model(small).parameters())
    timing = dict(expkit_s=statistics.median(t_ours), accelerate_s=statistics.median(t_acc), params_72b=n_ours,
                  params_72b_accelerate=n_acc, params_05b=n_ours_small, params_05b_accelerate=n_acc_small)
    print(f"\ncount Qwen2.5-72B: expkit meta {timing['expkit_s']:.2f} s, accelerate init_empty_weights "
          f"{timing['accelerate_s']:.2f} s (ratio {timing['accelerate_s'] / timing['expkit_s']:.2f}); "
          f"counts {n_ours:,} vs {n_acc:,}")
    print(f"count Qwen2.5-0.5B (tied): expkit {n_ours_small:,}, accelerate {n_acc_small:,}")
    print("(median of 3; the machine was shared with other work)")
    out = Path(__file__).parent / "results" / "memory.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"peak_ratios": rows, "count_timing": timing}, indent=2))


if __name__ == "__main__":
    main()
