"""Lab C4.6: attribute an OOM by when it happens; three tracebacks read by expkit why and the ledger."""

from __future__ import annotations

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Verdict
from expkit.labs.registry import lab

SEED = SeedFigure("attribution", "OOM attributed by its phase", None, "",
                  "right after load -> weights; after the first backward -> gradients + optimizer state; "
                  "still OOM with LoRA -> activations")
SITE = "/usr/lib/python3.11/site-packages"
# (name, model, ledger options, GPU, expected block, the frames of the failing call)
SCENARIOS = (
    ("weights", "qwen2.5-72b", {"seq": 2048}, "a100-80gb", "weights", (
        ("/home/me/train.py", 21, "<module>", 'model = AutoModelForCausalLM.from_pretrained(path, device_map="cuda")'),
        (f"{SITE}/transformers/modeling_utils.py", 4410, "from_pretrained", "model = cls._load_pretrained_model("),
        (f"{SITE}/transformers/modeling_utils.py", 4980, "_load_pretrained_model", "param = param.to(device)"))),
    ("optimizer state", "qwen2.5-1.5b", {"seq": 256}, "4090", "optimizer state", (
        ("/home/me/train.py", 64, "<module>", "optimizer.step()"),
        (f"{SITE}/torch/optim/optimizer.py", 485, "wrapper", "out = func(*args, **kwargs)"),
        (f"{SITE}/torch/optim/adamw.py", 219, "step", "adamw("),
        (f"{SITE}/torch/optim/adamw.py", 436, "_init_group", "state['exp_avg_sq'] = torch.zeros_like(p)"))),
    ("activations", "qwen2.5-7b", {"seq": 16384, "method": "lora"}, "4090", "activations", (
        ("/home/me/train.py", 58, "<module>", "out = model(**batch)"),
        (f"{SITE}/torch/nn/modules/module.py", 1773, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
        (f"{SITE}/transformers/models/qwen2/modeling_qwen2.py", 58, "forward",
         "down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))"))),
)


def _traceback_text(frames: tuple[tuple[str, int, str, str], ...], requested: int, capacity: int, allocated: int) -> str:
    """A CUDA OOM traceback in PyTorch >= 2.2's format (c10/cuda/CUDACachingAllocator.cpp)."""
    gib, mib = 2**30, 2**20
    lines = ["Traceback (most recent call last):"]
    for path, line, func, code in frames:
        lines += [f'  File "{path}", line {line}, in {func}', f"    {code}"]
    free = max(capacity - allocated, 0)
    lines.append(f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {requested / mib:.2f} MiB. GPU 0 has "
                 f"a total capacity of {capacity / gib:.2f} GiB of which {free / mib:.2f} MiB is free. Including "
                 f"non-PyTorch memory, this process has {allocated / gib:.2f} GiB memory in use. Of the allocated "
                 f"memory {allocated / gib:.2f} GiB is allocated by PyTorch, and 20.00 MiB is reserved by PyTorch "
                 "but unallocated.")
    return "\n".join(lines) + "\n"


@lab(id="C4.6", title="Attribute an OOM by when it happens", claims=("C4.6",), seed=(SEED,))
def run(ctx: LabContext) -> LabOutput:
    from expkit.diagnose import diagnose_text
    from expkit.memory import attribute_oom, estimate_training_memory
    from expkit.perf.hardware import get_gpu

    ms = []
    hits = 0
    lines = []
    for name, model, opts, gpu, expected, frames in SCENARIOS:
        led = estimate_training_memory(model, gpu=gpu, **opts)
        capacity = int(get_gpu(gpu).memory_gb * 10**9 * 0.985)  # what CUDA reports: a little under the datasheet
        before = {"weights": 0, "optimizer state": led.bytes_of("fp32 master weights", "bf16 weights",
                                                               "frozen base weights", "gradients")}.get(expected)
        allocated = min(capacity - 2**20, before if before is not None else int(capacity * 0.97))
        text = _traceback_text(frames, requested=max(led.bytes_of("Adam v") // 8, 2**25), capacity=capacity,
                               allocated=allocated)
        oom = diagnose_text(text).explanation.oom
        ex = attribute_oom(led, model=model, phase=oom.phase if oom else None,
                           capacity_bytes=oom.capacity_bytes if oom else None)
        ok = ex.block == expected
        hits += ok
        top = ex.remedies[0] if ex.remedies else None
        ms.append(Measurement(name, f"{model} {' '.join(f'{k} {v}' for k, v in opts.items())} on {gpu}: block",
                              ex.block, "", Verdict("reproduced") if ok else Verdict("not reproduced", ex.reason),
                              SEED, detail=f"phase read from the frames: {oom.phase if oom else None}; "
                                           f"{ex.reason}; top remedy: "
                                           + (f"{top.name} saves {top.savings_bytes / 2**30:.1f} GiB" if top else "-")))
        lines.append(f"{name}: {ex.reason}")
    explanation = (
        f"Three CUDA out-of-memory tracebacks, written in PyTorch's message format with the frames of a typical "
        f"Hugging Face script (no GPU here to produce real ones), read by expkit why's parser and reconciled with "
        f"the ledger of the same run: {hits} of 3 attributed to the intended block. Loading a 72B model onto "
        f"one 80 GB GPU fails at load: weights. A 1.5B full fine-tune on 24 GB loads and runs forward and "
        f"backward, then fails when AdamW creates its two fp32 moments in the first optimizer step. A 7B LoRA run "
        f"at 16k tokens still fails in the forward pass: with the training state down to adapters, activations "
        "are what is left, and checkpointing is the top-ranked remedy.\n\n" + "\n".join(lines)
    )
    return LabOutput(measurements=tuple(ms), explanation=explanation)
