"""Decode measured: tokens/s of greedy decoding at several batch sizes, with each point's FLOPs and bytes.

The model is a transformers causal LM (by default a small randomly initialised Qwen2 built from a config
here, nothing downloaded). Only the decode steps are timed: a prefill fills the KV cache first, then
each step feeds one token per sequence and takes the argmax (greedy).
"""

from __future__ import annotations

import inspect
import statistics
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from expkit.errors import UsageError

if TYPE_CHECKING:
    from expkit.perf.roofline import Roof

__all__ = [
    "TINY_DECODER_CONFIG",
    "DecodeMeasurement",
    "DecodePoint",
    "build_tiny_decoder",
    "measure_decode",
    "measure_decode_throughput",
]

# A Qwen2-style decoder whose fp32 matmul weights (12.4M parameters, ~50 MB) are larger than a
# typical CPU last-level cache (32 MiB here), so batch-1 decode streams the weights from DRAM as a real
# LLM streams them from HBM.
TINY_DECODER_CONFIG: dict[str, Any] = {
    "hidden_size": 384,
    "num_hidden_layers": 6,
    "num_attention_heads": 6,
    "num_key_value_heads": 2,
    "intermediate_size": 1024,
    "vocab_size": 8192,
    "max_position_embeddings": 2048,
    "tie_word_embeddings": True,
    "rope_theta": 10000.0,
}


@dataclass(frozen=True)
class DecodePoint:
    """One batch size: measured speed, and the step's FLOPs and bytes by the roofline model's accounting
    (weights in the model's dtype, KV cache at the mean context of the timed steps).

    ``step_time_s`` is the fastest timed step (the roof-comparable figure on a shared machine),
    ``median_step_time_s`` the typical one; ``tokens_per_s`` = batch / step_time_s.
    """

    batch: int
    new_tokens: int
    step_time_s: float
    median_step_time_s: float
    tokens_per_s: float
    median_tokens_per_s: float
    flops_per_step: float
    bytes_per_step: float
    intensity_flop_per_byte: float
    achieved_flop_s: float


def build_tiny_decoder(*, config: dict[str, Any] | None = None, seed: int = 0) -> Any:
    """A randomly initialised ``Qwen2ForCausalLM`` (fp32, eval mode) from ``config`` (default
    ``TINY_DECODER_CONFIG``). No download: the config is built here."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(Qwen2Config(**(config or TINY_DECODER_CONFIG)))
    return model.eval()


def _decode_steps(model: Any, *, batch: int, prompt_len: int, new_tokens: int, seed: int) -> list[float]:
    import torch

    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, model.config.vocab_size, (batch, prompt_len), generator=gen)  # (B, T)
    times = []
    with torch.inference_mode():
        out = model(input_ids=ids, use_cache=True)
        cache_kw = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        past = out[cache_kw]  # transformers >= 5: "cache"; older: "past_key_values"
        nxt = out.logits[:, -1, :].argmax(-1, keepdim=True)  # (B, 1)
        for _ in range(new_tokens):
            t0 = time.perf_counter()
            out = model(input_ids=nxt, use_cache=True, **{cache_kw: past})
            past = out[cache_kw]
            nxt = out.logits[:, -1, :].argmax(-1, keepdim=True)  # (B, 1)
            times.append(time.perf_counter() - t0)
    return times


MAX_DECODE_BATCH = 4096
"""The largest batch (and number of new tokens) measured: the tiny decoder's KV cache at 4096 x 4096 tokens is
already GiBs on a CPU; past it (``--batch-sizes 18446744073709551616`` was torch's TypeError, exit 3) a
measurement would not end or not fit."""


def measure_decode_throughput(
    *,
    batch_sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32, 64),
    new_tokens: int = 8,
    prompt_len: int = 16,
    model: Any | None = None,
    seed: int = 0,
    threads: int | None = None,
) -> tuple[DecodePoint, ...]:
    """Greedy-decode ``new_tokens`` tokens at each batch size and time the decode steps.

    Args:
        batch_sizes: batch sizes, each >= 1.
        new_tokens: timed decode steps per batch size (>= 2; the first step is dropped as warm-up).
        prompt_len: prompt tokens (prefill, not timed).
        model: a transformers causal LM; default ``build_tiny_decoder()``.
        seed: for the model and the random prompts.
        threads: torch CPU threads while decoding (None: torch's default).

    Returns:
        One DecodePoint per batch size; ``tokens_per_s`` = batch / fastest step time.

    Example:
        >>> pts = measure_decode_throughput(batch_sizes=(1, 8), new_tokens=3)
        >>> pts[1].tokens_per_s > pts[0].tokens_per_s
        True
    """
    from expkit.hardware.threads import torch_threads
    from expkit.models.description import describe_config

    if not batch_sizes or min(batch_sizes) < 1 or max(batch_sizes) > MAX_DECODE_BATCH:
        raise UsageError(f"batch sizes {batch_sizes} must be non-empty, each in [1, {MAX_DECODE_BATCH:,}]")
    if not 2 <= new_tokens <= MAX_DECODE_BATCH or prompt_len < 1:
        raise UsageError(
            f"new_tokens={new_tokens} must be in [2, {MAX_DECODE_BATCH:,}] and prompt_len={prompt_len} >= 1"
        )
    model = model if model is not None else build_tiny_decoder(seed=seed)
    name = type(model).__name__
    desc = describe_config(model.config.to_dict(), name=name, source=name)
    linear, io = desc.linear_params(), desc.matmul_io_per_token()
    groups = desc.attention_groups()  # a full-attention decoder: every cached token read at each step
    attn_flop = sum(n * a.decode_flop_per_cached_token for a, n in groups)  # per cached token, all layers
    kv_elements = sum(n * a.kv_cache_elements_per_token for a, n in groups)
    wbytes = next(model.parameters()).element_size()
    points = []
    for batch in batch_sizes:
        with torch_threads(threads):
            times = _decode_steps(model, batch=batch, prompt_len=prompt_len, new_tokens=new_tokens, seed=seed)[1:]
        step, median = min(times), statistics.median(times)
        ctx = prompt_len + 1 + new_tokens / 2  # mean KV length over the timed steps
        # same accounting as expkit.perf.roofline (decode), in the model's own dtype
        flops = 2 * linear * batch + batch * ctx * attn_flop
        nbytes = linear * wbytes + batch * io * wbytes + batch * kv_elements * ctx * wbytes
        points.append(
            DecodePoint(
                batch=batch,
                new_tokens=new_tokens,
                step_time_s=step,
                median_step_time_s=median,
                tokens_per_s=batch / step,
                median_tokens_per_s=batch / median,
                flops_per_step=flops,
                bytes_per_step=nbytes,
                intensity_flop_per_byte=flops / nbytes,
                achieved_flop_s=flops / step,
            )
        )
    return tuple(points)


@dataclass(frozen=True)
class DecodeMeasurement:
    """Decode measured at each batch size, and (when asked, for a figure) this CPU's roof measured in the same
    run. Its JSON is the points' (``DecodePoint`` list)."""

    points: tuple[DecodePoint, ...]
    roof: Roof | None = None

    def __json__(self) -> tuple[DecodePoint, ...]:
        return self.points


def measure_decode(
    *, batch_sizes: tuple[int, ...], new_tokens: int = 8, threads: int | None = None, with_roof: bool = False
) -> DecodeMeasurement:
    """``measure_decode_throughput`` on the tiny decoder, and with ``with_roof`` this CPU's roof (the one a
    figure draws the points under), measured with the same ``threads``."""
    points = measure_decode_throughput(batch_sizes=batch_sizes, new_tokens=new_tokens, threads=threads)
    if not with_roof:
        return DecodeMeasurement(points=points)
    from expkit.perf.roofs import measure_roof_here

    return DecodeMeasurement(points=points, roof=measure_roof_here(threads=threads))
