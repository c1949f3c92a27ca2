"""Out-of-memory messages (CUDA, HIP, CPU) parsed into numbers, and the training phase an OOM hit.

Claim C4.6: attribute an OOM by when it happens. Right after load: the weights. After the first
backward: gradients and optimizer state. Still OOM with LoRA: activations.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from expkit.diagnose.tracebacks import Frame

__all__ = ["OomInfo", "Phase", "detect_phase", "parse_oom_message", "parse_size_bytes"]

Phase = Literal["loading", "forward", "backward", "optimizer step", "generate"]

_UNITS = {
    "bytes": 1,
    "b": 1,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
}
_SIZE = r"(\d+(?:\.\d+)?\s?(?:bytes|[KMGT]i?B|B))"

# Formats from PyTorch c10/cuda/CUDACachingAllocator.cpp. Since 2.2 (torch.OutOfMemoryError):
#   CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.15 GiB of which
#   6.69 MiB is free. Including non-PyTorch memory, this process has 79.13 GiB memory in use. Of the
#   allocated memory 78.46 GiB is allocated by PyTorch, and 184.51 MiB is reserved by PyTorch but unallocated.
# Before 2.2:
#   CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity; 12.34 GiB already
#   allocated; 1.23 GiB free; 13.45 GiB reserved in total by PyTorch)
_OOM = re.compile(
    r"(CUDA|HIP|MPS backend) out of memory|CUDA error: out of memory"
    r"|DefaultCPUAllocator: not enough memory"
)
_REQUESTED = re.compile(r"(?:Tried to allocate|you tried to allocate) " + _SIZE)
_NEW_CAPACITY = re.compile(r"GPU (\d+) has a total capacity of " + _SIZE + r" of which " + _SIZE + r" is free")
_NEW_ALLOCATED = re.compile(
    r"Of the allocated memory " + _SIZE + r" is allocated by PyTorch, "
    r"(?:with "
    + _SIZE
    + r" allocated in private pools[^,]*, )?and "
    + _SIZE
    + r" is reserved by PyTorch but unallocated"
)
_IN_USE = re.compile(r"this process has " + _SIZE + r" memory in use")
_OLD = re.compile(
    r"\(GPU (\d+); "
    + _SIZE
    + r" total capacity; "
    + _SIZE
    + r" already allocated; "
    + _SIZE
    + r" free; "
    + _SIZE
    + r" reserved in total by PyTorch\)"
)


@dataclass(frozen=True)
class OomInfo:
    """What an out-of-memory message says, in bytes (binary units as PyTorch prints them: MiB, GiB).

    ``reserved_bytes`` is everything PyTorch's caching allocator holds (allocated + cached);
    ``allocated_bytes`` is what live tensors use. A field the message does not carry is None.
    ``phase`` is when it happened, from the frames (None with ``phase_reason`` saying why).
    """

    device: str
    requested_bytes: int | None
    capacity_bytes: int | None
    free_bytes: int | None
    reserved_bytes: int | None
    allocated_bytes: int | None
    process_in_use_bytes: int | None
    phase: Phase | None
    phase_reason: str

    @property
    def reserved_unallocated_bytes(self) -> int | None:
        """Cached by the allocator but not used by a tensor: large values mean fragmentation."""
        if self.reserved_bytes is None or self.allocated_bytes is None:
            return None
        return self.reserved_bytes - self.allocated_bytes


def parse_size_bytes(text: str) -> int:
    """``"20.00 MiB"`` -> 20971520. Binary units (KiB, MiB, GiB) as PyTorch prints them; KB/MB/GB decimal.

    Raises:
        ValueError: text that is not a number and a unit.
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s?([A-Za-z]+)\s*", text)
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"not a size: {text!r} (expected e.g. '20.00 MiB')")
    return round(float(m.group(1)) * _UNITS[m.group(2).lower()])


def _size(m: re.Match[str] | None, group: int) -> int | None:
    if m is None or m.group(group) is None:
        return None
    return parse_size_bytes(m.group(group))


def _is_loading(f: Frame) -> bool:
    return (
        f.function
        in {
            "from_pretrained",
            "load_state_dict",
            "_load_pretrained_model",
            "load_checkpoint_in_model",
            "load_file",
            "load_model",
        }
        or (f.function == "load" and "torch/serialization" in f.file)
        or bool(f.code and re.search(r"from_pretrained\(|load_state_dict\(|torch\.load\(|load_file\(", f.code))
    )


def _is_generate(f: Frame) -> bool:
    return (
        f.function in {"generate", "_sample", "_beam_search", "_assisted_decoding"} and "generation" in f.file
    ) or bool(f.kind == "yours" and f.code and ".generate(" in f.code)


def _is_optimizer(f: Frame) -> bool:
    return (
        "torch/optim/" in f.file.replace("\\", "/")
        or (f.function == "step" and "optim" in f.file)
        or bool(f.kind == "yours" and f.code and re.search(r"(optim\w*|opt)\.step\(", f.code))
    )


def _is_backward(f: Frame) -> bool:
    path = f.file.replace("\\", "/")
    return (
        f.function in {"backward", "_engine_run_backward", "run_backward"}
        and ("torch/_tensor" in path or "torch/autograd" in path or "accelerate" in path)
    ) or bool(f.kind == "yours" and f.code and re.search(r"\.backward\(", f.code))


def _is_forward(f: Frame) -> bool:
    return f.function in {"_call_impl", "_wrapped_call_impl", "forward"}


def _is_moving(f: Frame) -> bool:
    return f.function in {"_apply", "to", "cuda"} and "torch/nn/modules/module" in f.file.replace("\\", "/")


_PHASE_RULES: tuple[tuple[Phase, object], ...] = (
    ("loading", _is_loading),
    ("generate", _is_generate),
    ("optimizer step", _is_optimizer),
    ("backward", _is_backward),
    ("forward", _is_forward),
    ("loading", _is_moving),
)


@dataclass(frozen=True)
class PhaseGuess:
    """The phase of the step an error happened in (None: unknown), and the frame that decided or why not."""

    phase: Phase | None
    reason: str


def detect_phase(frames: Sequence[Frame]) -> PhaseGuess:
    """When in the training step an error happened: loading, forward, backward, optimizer step or
    generate, from the functions and code lines of the frames.

    Returns:
        PhaseGuess: the reason names the frame that decided, or says why the phase is unknown.

    Example:
        >>> detect_phase([Frame("/me/train.py", 40, "<module>", "loss.backward()", "yours")])
        PhaseGuess(phase='backward', reason='/me/train.py:40 loss.backward()')
    """
    for phase, test in _PHASE_RULES:
        for f in reversed(frames):
            if test(f):  # type: ignore[operator]
                what = f.code if f.kind == "yours" and f.code else f"in {f.function}"
                return PhaseGuess(phase, f"{f.file}:{f.line} {what}")
    if not frames:
        return PhaseGuess(None, "the traceback has no frames")
    return PhaseGuess(None, "no frame names a loading, forward, backward, optimizer or generate call")


def parse_oom_message(message: str, frames: Sequence[Frame] = ()) -> OomInfo | None:
    """Parse an out-of-memory message (CUDA, HIP, MPS, CPU); None when ``message`` is not one.

    Args:
        message: the exception message (the text after ``torch.OutOfMemoryError:``).
        frames: the exception's frames, to name the phase.

    Example:
        >>> info = parse_oom_message("CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total "
        ...     "capacity of 79.15 GiB of which 6.69 MiB is free.")
        >>> info.requested_bytes, info.device
        (20971520, 'cuda:0')
    """
    head = _OOM.search(message)
    if head is None:
        return None
    requested = _size(_REQUESTED.search(message), 1)
    device = "cpu" if "CPUAllocator" in head.group(0) else ("mps" if "MPS" in head.group(0) else "cuda")
    capacity = free = reserved = allocated = None
    new = _NEW_CAPACITY.search(message)
    old = _OLD.search(message)
    if new:
        device = f"cuda:{new.group(1)}"
        capacity, free = _size(new, 2), _size(new, 3)
        alloc = _NEW_ALLOCATED.search(message)
        if alloc:
            allocated = _size(alloc, 1)
            unalloc = _size(alloc, 3)
            # the message's "allocated" already includes private pools; reserved = allocated + cached
            reserved = None if allocated is None or unalloc is None else allocated + unalloc
    elif old:
        device = f"cuda:{old.group(1)}"
        capacity, allocated, free, reserved = _size(old, 2), _size(old, 3), _size(old, 4), _size(old, 5)
    guess = detect_phase(frames)
    return OomInfo(
        device=device,
        requested_bytes=requested,
        capacity_bytes=capacity,
        free_bytes=free,
        reserved_bytes=reserved,
        allocated_bytes=allocated,
        process_in_use_bytes=_size(_IN_USE.search(message), 1),
        phase=guess.phase,
        phase_reason=guess.reason,
    )
