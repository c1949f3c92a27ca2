"""Lab C4.5: autocast does not make the parameters bf16; it halves matmul intermediates."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from expkit.labs.base import LabContext, LabOutput, Measurement, SeedFigure, Shown, Within, judged
from expkit.labs.registry import lab

SEED_DTYPES = SeedFigure(
    "param_dtypes",
    "parameter dtypes inside autocast",
    None,
    "",
    "autocast does not turn the parameters into bf16; the training state stays 16 B/param",
)
SEED_HALVES = SeedFigure(
    "matmul_ratio", "matmul intermediates under autocast", None, "", "autocast halves matmul intermediates"
)
KEEPS_FP32 = Shown("inside autocast the parameters and their gradients stay float32; a linear's output is bfloat16")
# "halves": bf16 is 2 bytes where fp32 is 4, so the matmul outputs should be exactly half
HALVES = Within(0.5, rel=0.05, source="+-5%: our tolerance for 'halves'")
TINY = dict(
    model_type="qwen2",
    hidden_size=256,
    intermediate_size=768,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    vocab_size=2000,
    tie_word_embeddings=True,
)


@dataclass(frozen=True)
class AutocastDtypes:
    """What one forward + backward of a model under bf16 autocast showed: the dtype names of its parameters, of
    its gradients and of its linear layers' outputs, and the linear outputs' bytes under autocast and without it."""

    params: frozenset[str]
    grads: frozenset[str]
    linear_out: frozenset[str]
    autocast_bytes: int
    plain_bytes: int

    @property
    def keeps_fp32(self) -> bool:
        return self.params == {"float32"} and self.grads == {"float32"} and self.linear_out == {"bfloat16"}

    @property
    def matmul_ratio(self) -> float:
        return self.autocast_bytes / self.plain_bytes


def measure_autocast_dtypes(model: Any, ids: Any) -> AutocastDtypes:
    """Run ``model`` on ``ids`` once as it is and once under ``torch.autocast("cpu", bfloat16)`` (then backward),
    with forward hooks on every ``nn.Linear`` that add up their output bytes and note their dtypes."""
    import torch

    def name(dtype: Any) -> str:
        return str(dtype).removeprefix("torch.")

    linear_out: set[str] = set()
    out_bytes = {"plain": 0, "autocast": 0}  # bytes of every linear layer's output (the matmul intermediates)
    mode = ["plain"]

    def on_linear(m, a, out) -> None:  # noqa: ANN001
        out_bytes[mode[0]] += out.numel() * out.element_size()
        if mode[0] == "autocast":
            linear_out.add(name(out.dtype))

    hooks = [mod.register_forward_hook(on_linear) for mod in model.modules() if isinstance(mod, torch.nn.Linear)]
    with torch.no_grad():
        model(input_ids=ids)  # the same forward without autocast: the reference sizes
    mode[0] = "autocast"
    with torch.autocast("cpu", dtype=torch.bfloat16):
        params = frozenset(name(p.dtype) for p in model.parameters())
        loss = model(input_ids=ids, labels=ids).loss
    for hk in hooks:
        hk.remove()
    loss.backward()
    grads = frozenset(name(p.grad.dtype) for p in model.parameters() if p.grad is not None)
    return AutocastDtypes(params, grads, frozenset(linear_out), out_bytes["autocast"], out_bytes["plain"])


def fp32_saved_parts(model: Any, *, seq: int, seed: int) -> tuple[float, str]:
    """The share (%) of the bytes saved for backward under bf16 autocast that stay float32, and the parts holding
    the most of them, from lab C4.2's saved-tensor probe (each saved storage by module, op and dtype): why all the
    saved tensors do not halve, measured rather than said."""
    from collections import defaultdict

    from expkit.labs.lab_c4_2_activations import saved_bytes_by_op

    parts = saved_bytes_by_op(model, seq=seq, precision="bf16-mixed", seed=seed)
    total = sum(p.nbytes for p in parts)
    fp32: dict[str, int] = defaultdict(int)
    for p in parts:
        if p.dtype == "float32":
            fp32[p.part] += p.nbytes
    top = sorted(fp32.items(), key=lambda kv: -kv[1])[:3]
    return 100 * sum(fp32.values()) / total, ", ".join(f"{part} {100 * n / total:.0f}%" for part, n in top)


@lab(id="C4.5", title="autocast keeps fp32 parameters", claims=("C4.5",), seed=(SEED_DTYPES, SEED_HALVES))
def run(ctx: LabContext) -> LabOutput:
    import torch

    from expkit.memory.replica import ReplicaQuery, build_replica, measure_saved_bytes
    from expkit.models.description import describe_config

    spec = describe_config(TINY, name="tiny-qwen2", source="lab C4.5")
    model = build_replica(spec, ReplicaQuery(precision="fp32", seed=ctx.seed))
    ids = torch.randint(0, spec.vocab_size, (1, 128))
    dt = measure_autocast_dtypes(model, ids)
    seen = {"params": dt.params, "grads": dt.grads, "linear_out": dt.linear_out}
    out_bytes = {"autocast": dt.autocast_bytes, "fp32": dt.plain_bytes}
    matmul_ratio, ok = dt.matmul_ratio, dt.keeps_fp32
    fp32 = measure_saved_bytes(model, batch=1, seq=128, precision="fp32").activation_bytes
    mixed = measure_saved_bytes(model, batch=1, seq=128, precision="bf16-mixed")
    ratio = mixed.activation_bytes / fp32
    fp32_share, fp32_top = fp32_saved_parts(model, seq=128, seed=ctx.seed)
    ms = (
        judged(
            "param_dtypes",
            "parameters and gradients float32, linear outputs bfloat16, inside autocast",
            ok,
            "",
            rule=KEEPS_FP32,
            seed=SEED_DTYPES,
            detail=f"parameters: {', '.join(sorted(seen['params']))}; "
            f"gradients: {', '.join(sorted(seen['grads']))}; "
            f"linear outputs: {', '.join(sorted(seen['linear_out']))}",
        ),
        judged(
            "matmul_ratio",
            "bytes of every linear layer's output, autocast bf16 / fp32",
            matmul_ratio,
            "x",
            rule=HALVES,
            seed=SEED_HALVES,
            detail=f"{out_bytes['autocast']:,} B vs {out_bytes['fp32']:,} B over one forward (forward hooks on "
            "every nn.Linear, LM head included)",
        ),
        Measurement(
            "act_ratio",
            "all tensors saved for backward, autocast bf16 / fp32",
            ratio,
            "x",
            detail=f"{mixed.activation_bytes:,} B vs {fp32:,} B; plus {mixed.weight_copy_bytes:,} B "
            "of 16-bit weight copies; not the seed's quantity (it includes non-matmul tensors)",
        ),
        Measurement(
            "act_fp32_share",
            "bytes saved for backward under autocast that stay float32",
            fp32_share,
            "%",
            detail=f"largest: {fp32_top} (saved-tensor hooks by module, op and dtype, as lab C4.2)",
        ),
    )
    explanation = (
        "Inside torch.autocast every parameter is still float32 and so are the gradients that backward writes; "
        "only the outputs of matmul-class ops come out in bfloat16. So the training state stays 16 B/param "
        f"(lab C4.1). What autocast halves is the matmul intermediates: every linear layer's output is "
        f"{matmul_ratio:.2f}x its fp32 size. All the "
        f"tensors saved for backward shrink to {ratio:.2f} of fp32, not 0.5: under autocast {fp32_share:.0f}% of "
        f"the saved bytes stay float32 (largest: {fp32_top}), measured by module, op and dtype; autocast also keeps "
        "16-bit copies of the weights for backward."
    )
    return LabOutput(measurements=ms, explanation=explanation)
