"""The reading path of post-training: the call chain from ``trainer.train()`` down to ``compute_loss``
and the calls ``compute_loss`` makes below it, captured with ``sys.setprofile`` during one real step.
"""

from __future__ import annotations

import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CallChain", "CallSite", "trace_compute_loss"]

_LIBRARIES = ("trl", "transformers", "peft", "accelerate", "torch")
# below compute_loss only these are listed (torch's module plumbing and accelerate's gathers are skipped)
_READ = ("trl", "transformers", "peft")
_PLUMBING = {
    "get_tp_size",
    "can_return_tuple",
    "wrapper",
    "check_model_inputs",
    "get_base_model",
    "_get_model_inputs",
    "is_torchdynamo_compiling",
}


@dataclass(frozen=True)
class CallSite:
    """A Python function on the path: ``library`` (trl, transformers ...), file inside it, line, depth."""

    library: str
    function: str
    file: str
    line: int
    depth: int

    def __str__(self) -> str:
        return f"{self.library}: {self.function}  ({self.file}:{self.line})"


@dataclass(frozen=True)
class CallChain:
    """``up``: outermost first, from ``train`` to ``compute_loss``; ``down``: the calls made under
    ``compute_loss`` (depth 1 = called by it directly) from trl, transformers and peft, in call order,
    first occurrence only."""

    up: tuple[CallSite, ...]
    down: tuple[CallSite, ...]
    events: int


def _site(code: Any, line: int, depth: int) -> CallSite | None:
    path = Path(code.co_filename)
    parts = path.parts
    for lib in _LIBRARIES:
        if lib in parts:
            i = len(parts) - 1 - parts[::-1].index(lib)
            if "site-packages" in parts[:i] or sysconfig.get_paths()["purelib"] in str(path):
                return CallSite(lib, code.co_qualname, "/".join(parts[i:]), line, depth)
    return None


def trace_compute_loss(trainer: Any, *, max_depth: int = 4, max_calls: int = 40) -> CallChain:
    """Run ``trainer.train()`` (set ``max_steps=1`` on its args first) with a profiler hook and return the
    path from ``train`` down to ``compute_loss`` and the library calls below it.

    Args:
        trainer: a ``transformers.Trainer`` (e.g. TRL's SFTTrainer) ready to train.
        max_depth: keep calls at most this deep below ``compute_loss``, counting listed frames only.
        max_calls: keep at most this many calls below it.

    Returns:
        CallChain (frames from trl, transformers, peft, accelerate and torch only).
    """
    up: list[CallSite] = []
    down: list[CallSite] = []
    seen: set[tuple[str, str]] = set()
    # one entry per open frame below compute_loss: was it a readable (listed) frame? None: not inside yet
    stack: list[bool] | None = None
    state = {"events": 0, "done": False}

    def hook(frame: Any, event: str, arg: Any) -> None:
        nonlocal stack
        state["events"] += 1
        if state["done"]:
            return
        code = frame.f_code
        if event == "call":
            if stack is None:
                if code.co_name == "compute_loss":
                    f = frame
                    while f is not None:
                        site = _site(f.f_code, f.f_lineno, 0)
                        if site is not None:
                            up.append(site)
                        if f.f_code.co_name == "train":
                            break
                        f = f.f_back
                    up.reverse()
                    stack = []
                return
            site = _site(code, frame.f_lineno, 0)
            readable = (
                site is not None
                and site.library in _READ
                and not code.co_name.startswith(("<", "__"))
                and code.co_name not in _PLUMBING
            )
            stack.append(readable)
            depth = sum(stack)
            key = (code.co_filename, code.co_qualname)
            if readable and depth <= max_depth and len(down) < max_calls and key not in seen:
                seen.add(key)
                assert site is not None  # readable is only True for a site
                down.append(CallSite(site.library, site.function, site.file, site.line, depth))
        elif event == "return" and stack is not None:
            if stack:
                stack.pop()
            elif code.co_name == "compute_loss":
                state["done"] = True

    old = sys.getprofile()
    sys.setprofile(hook)
    try:
        trainer.train()
    finally:
        sys.setprofile(old)
    return CallChain(up=tuple(up), down=tuple(down), events=state["events"])
