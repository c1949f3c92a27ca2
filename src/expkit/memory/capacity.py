"""A simulated device capacity on the CPU: real runs that hit a real ``torch.OutOfMemoryError``.

``capped_memory(cap_bytes)`` counts the storage bytes of every tensor created inside it (freed ones
subtracted, via weak references on the storages) and raises ``torch.OutOfMemoryError`` with CUDA's
message format when an allocation would pass the cap. The traceback then carries the real frames of
the loading, forward, backward or optimizer call that failed, so ``expkit why`` and the ledger can read it
as they would read a GPU's. Lab C4.6 uses it; no GPU needed.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from expkit.errors import InputError
from expkit.models.description import ModelDescription

__all__ = ["capped_memory"]


def _size(n: int) -> str:
    """Bytes as PyTorch's allocator prints them (c10 format_size): bytes, KiB, MiB or GiB, 2 decimals."""
    if n < 2**10:
        return f"{n} bytes"
    for unit, scale in (("KiB", 2**10), ("MiB", 2**20)):
        if n < 1024 * scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n / 2**30:.2f} GiB"


def _mode_class() -> Any:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class _Capped(TorchDispatchMode):
        def __init__(self, cap_bytes: int) -> None:
            super().__init__()
            self.cap_bytes = cap_bytes
            self.live_bytes = 0
            self.peak_bytes = 0
            self._refs: dict[int, Any] = {}

        def _release(self, key: int, nbytes: int) -> None:
            if self._refs.pop(key, None) is not None:
                self.live_bytes -= nbytes

        def _on_free(self, key: int, nbytes: int) -> Callable[[Any], None]:
            """The weakref callback that releases ``nbytes`` when the storage at ``key`` is freed."""
            return lambda _ref: self._release(key, nbytes)

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            for t in tree_flatten(out)[0]:
                if not isinstance(t, torch.Tensor) or t.device.type == "meta":
                    continue
                st = t.untyped_storage()
                key = st.data_ptr()
                if not key or key in self._refs:
                    continue  # a view or an in-place result: no new storage
                n = st.nbytes()
                if self.live_bytes + n > self.cap_bytes:
                    free = max(self.cap_bytes - self.live_bytes, 0)
                    raise torch.OutOfMemoryError(
                        f"CUDA out of memory. Tried to allocate {_size(n)}. GPU 0 has a total capacity of "
                        f"{_size(self.cap_bytes)} of which {_size(free)} is free. Including non-PyTorch memory, "
                        f"this process has {_size(self.live_bytes)} memory in use. Of the allocated memory "
                        f"{_size(self.live_bytes)} is allocated by PyTorch, and 0 bytes is reserved by PyTorch but "
                        "unallocated. (simulated on the CPU by expkit)"
                    )
                self._refs[key] = weakref.ref(st, self._on_free(key, n))
                self.live_bytes += n
                self.peak_bytes = max(self.peak_bytes, self.live_bytes)
            return out

    return _Capped


@contextmanager
def capped_memory(cap_bytes: int) -> Iterator[Any]:
    """Run the body as if on a device holding ``cap_bytes``; yields the mode (``live_bytes``, ``peak_bytes``).

    Only tensors created inside the block count; an allocation past the cap raises
    ``torch.OutOfMemoryError`` (message in CUDA's format, marked as simulated).

    Example:
        >>> import torch
        >>> with capped_memory(10**6) as cap:
        ...     x = torch.zeros(1000)
        >>> cap.peak_bytes
        4000
    """
    mode = _mode_class()(cap_bytes)
    with mode:
        yield mode


def load_empty(cfg: Any) -> Any:
    """The causal LM of ``cfg`` built on the meta device, then given uninitialized CPU storage (the loading
    phase: the weights are allocated here). ``to_empty`` gives each module its own tensor, so a tied
    lm_head / embedding pair would come out as two; they are tied again (a no-op for untied configs)."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    model.to_empty(device="cpu")
    model.tie_weights()
    return model


def run_step_capped(
    desc: ModelDescription, *, cap_bytes: int, seq: int, method: str = "full", lora_r: int = 16, seed: int = 0
) -> str | None:
    """Load the model ``desc`` describes (meta device, then ``to_empty``), run one fp32 AdamW training step inside
    ``capped_memory(cap_bytes)``, and return the OOM traceback text (None when the step fits).

    The phases are the real calls: ``Module.to_empty`` (loading), the forward, ``loss.backward()``,
    ``optimizer.step()`` (whose first call creates Adam's state).
    """
    import traceback
    import warnings

    import torch
    from transformers import AutoConfig

    if desc.model_type is None:
        raise InputError(
            f"{desc.name}: the config has no model_type, so transformers cannot build the model",
            hint="add the model_type of its architecture (e.g. llama) to config.json",
        )
    raw = {k: v for k, v in desc.raw.items() if k not in ("model_type", "architectures", "transformers_version")}
    cfg = AutoConfig.for_model(desc.model_type, **raw)
    torch.manual_seed(seed)
    ids = torch.randint(0, desc.vocab_size, (1, seq))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with capped_memory(cap_bytes):
                model = load_empty(cfg)
                if method != "full":
                    from peft import LoraConfig, get_peft_model

                    model = get_peft_model(
                        model, LoraConfig(r=lora_r, lora_alpha=2 * lora_r, target_modules="all-linear")
                    )
                opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
                loss = model(input_ids=ids.clone(), labels=ids.clone()).loss
                loss.backward()
                opt.step()
        except torch.OutOfMemoryError:
            return traceback.format_exc()
    return None
