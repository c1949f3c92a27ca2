"""Lab C3.7: ``loss.item()`` every step vs every 50: a sync point on a GPU, free on a CPU."""

from __future__ import annotations

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Verdict
from expkit.labs.registry import lab

SEED_ITEM = SeedFigure("item_sync", ".item() every step vs every 50", None, "",
                       ".item() waits for the GPU queue to drain: do not call it every step")


@lab(id="C3.7", title=".item() is a sync point", claims=("C3.7",), seed=(SEED_ITEM,))
def run(ctx: LabContext) -> LabOutput:
    import torch

    from expkit.train import CharLMConfig
    from expkit.train.probes import measure_item_sync

    small = CharLMConfig(n_layer=1, n_embd=32, n_head=2, block_size=32) if ctx.quick else \
        CharLMConfig(n_layer=2, n_embd=64, n_head=2, block_size=64)
    repeats = 1 if ctx.quick else 3
    cpu = measure_item_sync(model_config=small, device="cpu", steps=50, sparse_every=50, batch_size=4, seq_len=32,
                            repeats=repeats, seed=ctx.seed)
    measurements = [
        Measurement("item_sync_cpu", "CPU: step time with .item() every step / every 50", cpu.ratio, "x",
                    Verdict("differs", "a CPU runs each op to completion before returning: there is no queue to "
                            f"drain; one .item() alone costs {cpu.item_call_s * 1e6:.1f} us, "
                            f"{100 * cpu.item_call_s / cpu.sparse_step_s:.3f}% of a step, so the ratio's distance "
                            "from 1 is timing noise"), SEED_ITEM,
                    detail=f"{cpu.every_step_s * 1e3:.2f} vs {cpu.sparse_step_s * 1e3:.2f} ms/step, best of {repeats} "
                           "on a shared machine"),
        Measurement("item_call_cpu", "one .item() on a computed CPU scalar", cpu.item_call_s * 1e6, "us"),
    ]
    text = (f"On this CPU a step with .item() every step took {cpu.ratio:.2f}x the time of one reading every 50 "
            f"steps; the call itself costs {cpu.item_call_s * 1e6:.1f} us against a {cpu.sparse_step_s * 1e3:.1f} ms "
            "step. CPU kernels run synchronously, so there is no queue for .item() to wait on; what is left of "
            "the ratio is the noise of a shared machine. ")
    if torch.cuda.is_available():
        gpu = measure_item_sync(model_config=small, device="cuda", steps=50, sparse_every=50, batch_size=4, seq_len=32,
                                repeats=repeats, seed=ctx.seed)
        measurements.append(Measurement(
            "item_sync_cuda", "CUDA: step time with .item() every step / every 50", gpu.ratio, "x",
            Verdict("reproduced") if gpu.ratio > 1.05 else Verdict("not reproduced", "no measurable sync cost"),
            SEED_ITEM, detail=f"{gpu.every_step_s * 1e3:.2f} vs {gpu.sparse_step_s * 1e3:.2f} ms/step"))
        text += (f"On the GPU ({torch.cuda.get_device_name()}) the ratio is {gpu.ratio:.2f}x: the CPU stops launching "
                 "kernels until the queue drains, so the GPU idles while the next step is prepared.")
    else:
        text += ("No GPU here, so the GPU cost the seed describes is not measured; on CUDA this lab measures it. "
                 "expkit's loop reads the loss every log_interval steps only.")
    return LabOutput(measurements=tuple(measurements), explanation=text)
