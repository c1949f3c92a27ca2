"""The child side of ``expkit doctor``: arm a :class:`~expkit.doctor.probe.Probe` the moment the program's
``import torch`` completes, and write its events as JSON lines to ``$EXPKIT_DOCTOR_OUT``.

Nothing here imports torch: the bootstrap runs in every Python process the command starts (DataLoader
workers, ``torchrun``'s launcher), and only those that import torch are watched.
"""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.machinery
import json
import os
import sys
from typing import Any

__all__ = ["DEFAULT_WATCH_STEPS", "ENV_OUT", "ENV_ROOT", "ENV_STEPS", "ENV_STOP", "arm_from_environment"]

DEFAULT_WATCH_STEPS = 2  # the budget: a silent bug is caught within the first two optimizer steps
ENV_OUT = "EXPKIT_DOCTOR_OUT"  # the JSONL file the events go to
ENV_STEPS = "EXPKIT_DOCTOR_STEPS"  # how many optimizer steps to watch
ENV_STOP = "EXPKIT_DOCTOR_STOP"  # "1": end the program once the watched steps are over (--steps)
ENV_ROOT = "EXPKIT_DOCTOR_ROOT"  # the folder holding the expkit package, for a python without it


class _JsonlSink:
    """Append one JSON line per event; each line is one ``write`` so processes sharing the file do not interleave."""

    def __init__(self, path: str, stop_when_done: bool) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.stop_when_done = stop_when_done
        self.pid = os.getpid()
        self.rank = os.environ.get("RANK")
        self.findings: list[dict[str, Any]] = []
        self.recorded = 0  # the steps of the watch once it is over

    def __call__(self, event: dict[str, Any]) -> None:
        event = {**event, "pid": self.pid, "rank": int(self.rank) if self.rank else None}
        os.write(self.fd, (json.dumps(event, default=str) + "\n").encode())
        if event["event"] == "finding":
            self.findings.append({k: v for k, v in event.items() if k not in ("event", "pid", "rank")})
        if event["event"] == "watch_done":
            self.recorded = int(event.get("steps", 0))
            self._record(self.recorded)
        elif event["event"] == "finding" and self.recorded:  # found after the watch: the run's record gets it too
            self._record(self.recorded)
        if event["event"] == "watch_done" and self.stop_when_done:
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            os._exit(0)  # --steps: the watched steps are over, the rest of the run is not needed

    def _record(self, steps: int) -> None:
        """Under ``runs exec``: the findings into the run directory (rank 0, a process that stepped)."""
        from expkit.doctor.record import run_dir_from_environment, write_run_record

        run_dir = run_dir_from_environment()
        if run_dir is not None and steps > 0 and self.rank in (None, "0"):
            write_run_record(run_dir, findings=self.findings, steps_watched=steps, source="expkit doctor")


class _ArmOnTorchImport(importlib.abc.MetaPathFinder):
    """A finder that lets the real one load ``torch`` and installs the probe right after torch's ``__init__``."""

    def __init__(self, arm: Any) -> None:
        self.arm = arm

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        original = loader.exec_module
        arm = self.arm

        def exec_module(module: Any) -> None:
            original(module)
            arm()

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def arm_from_environment() -> None:
    """Called by the bootstrap ``sitecustomize``: watch this process once it imports torch."""
    out = os.environ.get(ENV_OUT)
    if not out or any(isinstance(f, _ArmOnTorchImport) for f in sys.meta_path):
        return
    steps = int(os.environ.get(ENV_STEPS, str(DEFAULT_WATCH_STEPS)))
    stop = os.environ.get(ENV_STOP) == "1"

    def arm() -> None:
        from expkit.doctor.probe import Probe

        sink = _JsonlSink(out, stop)
        probe = Probe(watch_steps=steps, sink=sink, after_watch=not stop)  # --steps ends the program at the watch
        probe.install()
        sink({"event": "armed", "argv": sys.argv})

        def at_exit() -> None:
            sink.stop_when_done = False  # the program is ending on its own: keep its exit code
            probe.finish()
            if probe.after is not None:
                probe.after.close()

        atexit.register(at_exit)

    sys.meta_path.insert(0, _ArmOnTorchImport(arm))
