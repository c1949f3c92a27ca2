"""``expkit.doctor.watch(model, optimizer)``: the same probe and checks, armed inside the program itself."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any

from expkit.doctor.findings import Finding
from expkit.doctor.record import run_dir_from_environment, write_run_record

if TYPE_CHECKING:
    from expkit.doctor.probe import Probe

__all__ = ["Watch", "watch"]


class Watch:
    """An armed probe that collects findings in memory; ends by itself after the watched steps, or at
    ``close()`` / the end of a ``with`` block."""

    def __init__(self, probe: Probe, events: list[dict[str, Any]], source: str = "watch()") -> None:
        self.probe = probe
        self._events = events
        self.source = source
        self._recorded = False

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(Finding.from_json(e) for e in self._events if e["event"] == "finding")

    @property
    def check_errors(self) -> tuple[str, ...]:
        return tuple(f"{e['check']}: {e['error']}" for e in self._events if e["event"] == "check_error")

    @property
    def done(self) -> bool:
        return self.probe.finished

    def close(self) -> tuple[Finding, ...]:
        """End the watch now (pending checks report) and return every finding; under ``runs exec`` they are
        also written to the run directory's ``doctor.json`` (:mod:`expkit.doctor.record`)."""
        self.probe.finish()
        if not self._recorded and self.probe.step > 0:
            self._recorded = True
            run_dir = run_dir_from_environment()
            if run_dir is not None:
                write_run_record(
                    run_dir,
                    findings=[f.to_json() for f in self.findings],
                    steps_watched=self.probe.step,
                    source=self.source,
                )
        return self.findings

    def __enter__(self) -> Watch:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def watch(
    model: Any = None, optimizer: Any = None, *, steps: int = 2, scheduler: Any = None, source: str = "watch()"
) -> Watch:
    """Watch the next ``steps`` optimizer steps of this process with every registered check.

    Args:
        model: the model being trained (optional: top-level forwards are found by the hooks anyway; giving
            it makes the parameter checks name its parameters from the first step).
        optimizer: the optimizer (optional, for the same reason; an optimizer built before the watch is
            otherwise only known once it steps).
        steps: optimizer steps to watch; then the hooks are removed.
        scheduler: the lr scheduler, when it was built before the watch (one built after is found by the hooks).
        source: who watches, as the run record names it (the callbacks pass their own name).

    Returns:
        Watch: ``.findings`` (a tuple of :class:`Finding`), ``.done``, ``.close()``.

    Example:
        >>> with watch(model, opt) as w:  # doctest: +SKIP
        ...     train_two_steps()
        >>> [f.check for f in w.findings]  # doctest: +SKIP
        ['missing_zero_grad']
    """
    from expkit.doctor.probe import Probe

    events: list[dict[str, Any]] = []
    probe = Probe(watch_steps=steps, sink=events.append)
    probe.install()
    if optimizer is not None:
        probe.optimizers.add(optimizer)
    if scheduler is not None:
        probe.schedulers.add(scheduler)
    if model is not None:
        probe.roots[id(model)] = model
    return Watch(probe, events, source)
