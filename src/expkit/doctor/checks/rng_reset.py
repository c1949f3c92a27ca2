"""A random generator set back to the same state every step (``torch.manual_seed(1234)`` at the top of the training
loop, ``torch.set_rng_state(saved)`` before each batch): every step draws the same random numbers, the same
diffusion noise and timesteps, dropout masks, augmentation and shuffled order, and training sees one draw over and
over while its loss looks healthy.

Measured on torch's global generators (the CPU one, and the current CUDA device's once CUDA is initialised), per
window between two steps of the leading optimizer. The seeding calls (``torch.manual_seed``,
``torch.random.set_rng_state``, ``torch.cuda.manual_seed``/``set_rng_state``...) are wrapped while armed: each one
that moves the generator to a state it was not in since the segment began opens a new *segment* of the stream,
remembering its start state and the user's line; one that returns the generator to a state an open segment of this
window already passed through (``fork_rng``'s restore, ``set_rng_state(saved)`` after an evaluation) resumes that
segment, so the evaluation's detour does not count. At a step of the leading optimizer the segment that drove the
step is judged: it was opened by such a call in this window, its start state is one the generator was already in
during an earlier watched step (a reseed to the same seed), every segment this window opened starts from such an
old state (per-sample seeding by index opens new ones), and the generator moved from that start by the step (random
numbers were drawn from the replayed stream). Seeding once before the loop, a different seed each step, a loop that
draws nothing, and an evaluation that forks or saves and restores the generator stay silent. Generators the program
builds itself (``torch.Generator()``) are not followed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import RawStack, raw_stack, user_line_of

if TYPE_CHECKING:
    from expkit.doctor.probe import Probe, StepEvent

Reader = Callable[[], "int | None"]


def _cpu_state() -> int | None:
    return hash(torch.default_generator.get_state().numpy().tobytes())


def _cuda_state() -> int | None:
    if not (torch.cuda.is_available() and torch.cuda.is_initialized()):
        return None
    gen = torch.cuda.default_generators[torch.cuda.current_device()]
    return hash(gen.get_state().numpy().tobytes())


# (owner, attribute, name shown): calls that set a generator's state, and calls that read it (a saved state the
# program may restore later). torch.manual_seed and torch.random.manual_seed are one function under two names.
def _setters() -> list[tuple[Any, str, str]]:
    out = [
        (torch, "manual_seed", "torch.manual_seed"),
        (torch.random, "manual_seed", "torch.random.manual_seed"),
        (torch, "set_rng_state", "torch.set_rng_state"),
        (torch.random, "set_rng_state", "torch.random.set_rng_state"),
        (torch.cuda, "manual_seed", "torch.cuda.manual_seed"),
        (torch.cuda, "manual_seed_all", "torch.cuda.manual_seed_all"),
        (torch.cuda, "set_rng_state", "torch.cuda.set_rng_state"),
        (torch.cuda, "set_rng_state_all", "torch.cuda.set_rng_state_all"),
    ]
    return [t for t in out if callable(getattr(t[0], t[1], None))]


def _getters() -> list[tuple[Any, str]]:
    out = [
        (torch, "get_rng_state"),
        (torch.random, "get_rng_state"),
        (torch.cuda, "get_rng_state"),
        (torch.cuda, "get_rng_state_all"),
    ]
    return [t for t in out if callable(getattr(t[0], t[1], None))]


def _describe(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    seed = args[0] if args else kwargs.get("seed")
    if "manual_seed" in name and isinstance(seed, int):
        return f"{name}({seed})"
    return f"{name}(...)"


@dataclass
class _Segment:
    """A stretch of one generator's stream: where it started, and the states it was seen in since."""

    start: int
    site: RawStack | None  # the seeding call that opened it; None: it began at a step boundary
    call: str
    seen: set[int] = field(default_factory=set)


class _Stream:
    """One global generator's segments in the current window (since the last step of the leading optimizer) and
    every state it was seen in during earlier windows."""

    def __init__(self, name: str, read: Reader) -> None:
        self.name = name
        self.read = read
        self.history: set[int] = set()
        self.segments: list[_Segment] = []
        self.current: _Segment | None = None
        self.opened: list[int] = []  # start states of the segments seeding calls opened in this window

    def begin_window(self, state: int) -> None:
        self.current = _Segment(state, None, "", {state})
        self.segments = [self.current]
        self.opened = []

    def observe(self, state: int | None) -> None:
        if state is None:
            return
        if self.current is None:
            self.begin_window(state)
        else:
            self.current.seen.add(state)

    def set_to(self, before: int | None, after: int | None, site: RawStack, call: str) -> None:
        if after is None:
            return
        self.observe(before)
        if self.current is None:
            self.begin_window(after)
            return
        if after in self.current.seen:
            return  # set back within the running segment (a seed it already started from, a restore)
        for seg in reversed(self.segments):
            if after in seg.seen:
                self.current = seg  # a restore after a detour (fork_rng, save/restore around evaluation)
                return
        self.current = _Segment(after, site, call, {after})
        self.segments.append(self.current)
        self.opened.append(after)

    def replayed(self, now: int) -> _Segment | None:
        """The segment that drove this step, when it replays a state of an earlier step and drew from it."""
        seg = self.current
        if seg is None or seg.site is None or now == seg.start:
            return None
        if seg.start not in self.history or any(s not in self.history for s in self.opened):
            return None
        return seg

    def close_window(self, now: int) -> None:
        for seg in self.segments:
            self.history |= seg.seen
        self.begin_window(now)


@register
class RngReseededEveryStep(Check):
    """The global random generator set back, by a seeding call inside the training loop, to a state it was already
    in during an earlier step, and random numbers drawn from it before the next step: every step draws the same
    noise, timesteps, dropout masks, augmentation and shuffled order. Names the seeding call's line."""

    name = "rng_reseeded_every_step"

    def __init__(self) -> None:
        self.streams = [_Stream("cpu", _cpu_state), _Stream("cuda", _cuda_state)]
        self._inside = 0  # seeding calls nest (torch.manual_seed calls torch.cuda.manual_seed_all)
        self.last_site: Any = None  # the call stack of the program's last seeding call (ranks_same_batch names it)

    def _read(self) -> list[int | None]:
        return [s.read() for s in self.streams]

    def start(self, probe: Probe) -> None:
        for stream, state in zip(self.streams, self._read(), strict=True):
            stream.observe(state)
        for owner, attr, label in _setters():
            probe.patch(owner, attr, self._wrap_setter(probe, label))
        for owner, attr in _getters():
            probe.patch(owner, attr, self._wrap_getter(probe))

    def _armed(self, probe: Probe) -> bool:
        return probe.active and not probe._in_check and not probe.finished and self._inside == 0

    def _wrap_setter(self, probe: Probe, label: str) -> Callable[[Any], Any]:
        check = self

        def make(original: Any) -> Any:
            def seed(*args: Any, **kwargs: Any) -> Any:
                if not check._armed(probe):
                    return original(*args, **kwargs)
                try:
                    before = check._read()
                except Exception as exc:  # noqa: BLE001 - a check's bug must not break the user's program
                    probe.check_failed(check.name, exc)
                    return original(*args, **kwargs)
                check._inside += 1
                try:
                    result = original(*args, **kwargs)
                finally:
                    check._inside -= 1
                try:
                    site, call = raw_stack(2), _describe(label, args, kwargs)
                    check.last_site = site
                    for stream, b, a in zip(check.streams, before, check._read(), strict=True):
                        stream.set_to(b, a, site, call)
                except Exception as exc:  # noqa: BLE001 - a check's bug must not break the user's program
                    probe.check_failed(check.name, exc)
                return result

            seed.__wrapped__ = original  # type: ignore[attr-defined]
            return seed

        return make

    def _wrap_getter(self, probe: Probe) -> Callable[[Any], Any]:
        check = self

        def make(original: Any) -> Any:
            def get_rng_state(*args: Any, **kwargs: Any) -> Any:
                result = original(*args, **kwargs)
                if check._armed(probe):
                    try:  # a state the program saved: restoring it later resumes this segment
                        for stream, state in zip(check.streams, check._read(), strict=True):
                            stream.observe(state)
                    except Exception as exc:  # noqa: BLE001 - a check's bug must not break the user's program
                        probe.check_failed(check.name, exc)
                return result

            get_rng_state.__wrapped__ = original  # type: ignore[attr-defined]
            return get_rng_state

        return make

    def on_step_post(self, probe: Probe, ev: StepEvent) -> None:
        lead = probe.lead() if probe.lead is not None else None
        if ev.optimizer is not lead:
            return
        for stream, now in zip(self.streams, self._read(), strict=True):
            if now is None:
                continue
            seg = stream.replayed(now)
            stream.close_window(now)
            if seg is None:
                continue
            file, line = user_line_of(seg.site)
            probe.report(
                kind="bug",
                check=self.name,
                message=f"{seg.call} set the {stream.name} random generator back to a state it was already in "
                f"during an earlier step, and optimizer step {ev.index} drew its random numbers from there: every "
                "step draws the same random numbers (the same noise and timesteps, dropout masks, augmentation and "
                "shuffled order), so training sees one random draw over and over",
                evidence={
                    "generator": stream.name,
                    "reseed_call": seg.call,
                    "step": ev.index,
                    "start_state_seen_in_earlier_step": True,
                    "random_numbers_drawn_in_step": True,
                },
                fix="seed once before the training loop (or with seed + step); to make an evaluation reproducible "
                "without resetting training, run it inside torch.random.fork_rng() or save torch.get_rng_state() "
                "before it and restore it after",
                where=(file, line) if file is not None else None,
            )
