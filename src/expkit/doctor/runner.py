"""The parent side of ``expkit doctor``: run the user's command unchanged with the bootstrap on its
PYTHONPATH, then read what the probe wrote and return a :class:`DoctorResult`."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import expkit
from expkit.doctor.checks.ranks import rank_findings
from expkit.doctor.child import DEFAULT_WATCH_STEPS, ENV_OUT, ENV_ROOT, ENV_STEPS, ENV_STOP
from expkit.doctor.findings import Finding
from expkit.doctor.record import run_dir_from_environment, write_run_record
from expkit.errors import UsageError

__all__ = [
    "BOOT_DIR",
    "DEFAULT_MAX_WAIT_S",
    "DEFAULT_WATCH_STEPS",
    "DoctorRequest",
    "DoctorResult",
    "doctor_exit_code",
    "read_events",
    "run_doctor",
]

BOOT_DIR = Path(__file__).resolve().parent / "boot"
DEFAULT_MAX_WAIT_S = 600.0  # no optimizer step in this long: doctor stops the program and says so
KILL_GRACE_S = 5.0  # SIGTERM, then SIGKILL after this long


@dataclass(frozen=True)
class DoctorRequest:
    """What to run and how long to watch.

    Attributes:
        command: the argv, as after ``--`` (``("python", "train.py", "--lr", "3e-4")``).
        watch_steps: optimizer steps to watch (the first optimizer that steps counts).
        stop_after_watch: end the program once the watched steps are over (``--steps``), else let it run on.
        cwd: the command's working directory (default: this one).
        env: variables added to the command's environment.
        stdout_to_stderr: send the command's stdout to our stderr (``--json`` keeps stdout for the envelope).
        max_wait_s: stop the program (its whole process group: SIGTERM, then SIGKILL) when this many seconds
            pass with no optimizer step while the watch is not over; None or 0: wait without limit.
    """

    command: tuple[str, ...]
    watch_steps: int = DEFAULT_WATCH_STEPS
    stop_after_watch: bool = False
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    stdout_to_stderr: bool = False
    max_wait_s: float | None = DEFAULT_MAX_WAIT_S


@dataclass(frozen=True)
class DoctorResult:
    """What doctor saw: the findings, how many steps it watched, and the program's own exit code.

    ``steps_watched`` is the largest number of steps any process's leading optimizer took while watched;
    0 with ``armed`` False means the program never imported torch, 0 with ``armed`` True that no
    optimizer stepped. ``stopped`` is True when ``--steps`` ended the program after the watch.
    ``timed_out`` is True when doctor stopped the program because ``max_wait_s`` passed with no
    optimizer step. ``exit_code`` is the program's as a shell shows it (128 + N when signal N ended it).
    """

    command: tuple[str, ...]
    exit_code: int
    watch_steps: int
    steps_watched: int
    armed: bool
    stopped: bool
    elapsed_s: float
    findings: tuple[Finding, ...]
    check_errors: tuple[str, ...] = ()
    timed_out: bool = False
    max_wait_s: float | None = None

    @property
    def bugs(self) -> int:
        return sum(f.kind == "bug" for f in self.findings)

    @property
    def program_failed(self) -> bool:
        """The program ended with a non-zero code of its own (not stopped by doctor)."""
        return self.exit_code != 0 and not self.timed_out


def doctor_exit_code(result: DoctorResult, *, strict: bool) -> int:
    """The exit code a CI gate can trust.

    The program's own code when it failed (whatever the findings); 1 when doctor stopped it after
    ``max_wait_s`` with no optimizer step; with ``strict``: 3 when a check broke (doctor's own failure),
    1 on any finding or when no optimizer step was watched; else 0.
    """
    if result.program_failed:
        return result.exit_code
    if result.timed_out:
        return 1
    if strict and result.check_errors:
        return 3
    if strict and (result.findings or result.steps_watched == 0):
        return 1
    return 0


def read_events(path: Path) -> list[dict[str, Any]]:
    """The probe's events from a JSONL file (a line cut by a killed process is skipped)."""
    events: list[dict[str, Any]] = []
    if not path.exists():
        return events
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "event" in obj:
            events.append(obj)
    return events


def _child_env(request: DoctorRequest, out: Path) -> dict[str, str]:
    env = {**os.environ, **request.env}
    old = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = str(BOOT_DIR) + (os.pathsep + old if old else "")
    env[ENV_OUT] = str(out)
    env[ENV_STEPS] = str(request.watch_steps)
    env[ENV_STOP] = "1" if request.stop_after_watch else "0"
    env[ENV_ROOT] = str(Path(expkit.__file__).resolve().parent.parent)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def summarize_events(
    request: DoctorRequest, events: list[dict[str, Any]], exit_code: int, elapsed_s: float, timed_out: bool = False
) -> DoctorResult:
    """Fold the probe's events (from every process of the command) into one result; a finding seen by
    several ranks at the same line is reported once."""
    findings: dict[tuple[Any, ...], Finding] = {}
    steps = 0
    stopped = False
    for ev in events:
        if ev["event"] == "finding":
            f = Finding.from_json(ev)
            findings.setdefault((f.check, f.file, f.line), f)
        elif ev["event"] in ("step", "watch_done"):
            steps = max(steps, int(ev.get("step", ev.get("steps", 0))))
            stopped = stopped or (
                ev["event"] == "watch_done" and request.stop_after_watch and steps >= request.watch_steps
            )
    for f in rank_findings(events):  # DDP: the ranks compared with each other
        findings.setdefault((f.check, f.file, f.line), f)
    errors = tuple(sorted({f"{e['check']}: {e['error']}" for e in events if e["event"] == "check_error"}))
    return DoctorResult(
        command=request.command,
        exit_code=exit_code,
        watch_steps=request.watch_steps,
        steps_watched=steps,
        armed=any(e["event"] == "armed" for e in events),
        stopped=stopped,
        elapsed_s=elapsed_s,
        findings=tuple(sorted(findings.values(), key=lambda f: (f.step, f.kind != "bug", f.check))),
        check_errors=errors,
        timed_out=timed_out,
        max_wait_s=request.max_wait_s or None,
    )


class _StepClock:
    """Reads the probe's events as they are appended and says when the last optimizer step (or the start)
    was, and whether every process that stepped has finished its watch."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.last = time.monotonic()
        self.watching = True
        self._partial = b""

    def poll(self) -> None:
        try:
            with self.path.open("rb") as fh:
                fh.seek(self.offset)
                chunk = fh.read()
        except OSError:
            return
        self.offset += len(chunk)
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        for raw in lines:
            try:
                ev = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(ev, dict):
                continue
            if ev.get("event") == "step":
                self.last = time.monotonic()
            elif ev.get("event") == "watch_done" and ev.get("steps"):
                self.watching = False


def _stop_group(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def _wait(proc: subprocess.Popen[bytes], out: Path, max_wait_s: float | None) -> tuple[int, bool]:
    """Wait for the program; stop it when ``max_wait_s`` pass with no optimizer step during the watch.
    Returns the shell exit code and whether doctor stopped it."""
    clock = _StepClock(out)
    try:
        while True:
            try:
                code = proc.wait(timeout=0.2)
                return (code if code >= 0 else 128 - code), False
            except subprocess.TimeoutExpired:
                pass
            clock.poll()
            if max_wait_s and clock.watching and time.monotonic() - clock.last > max_wait_s:
                break
    except KeyboardInterrupt:
        _stop_group(proc, signal.SIGINT)
        proc.wait()
        raise
    _stop_group(proc)
    try:
        code = proc.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        _stop_group(proc, signal.SIGKILL)
        code = proc.wait()
    return (code if code >= 0 else 128 - code), True


def run_doctor(request: DoctorRequest) -> DoctorResult:
    """Run ``request.command`` with the probe armed and report what the checks found.

    Raises:
        UsageError: no command, ``watch_steps`` < 1, or a command that cannot start.

    Example:
        >>> run_doctor(DoctorRequest(command=("python", "train.py"))).findings[0].check  # doctest: +SKIP
        'missing_zero_grad'
    """
    if not request.command:
        raise UsageError("no command given", hint="write it after --, e.g. expkit doctor -- python train.py")
    if request.watch_steps < 1:
        raise UsageError(f"watch_steps {request.watch_steps} is not a positive number of steps", hint="e.g. 2")
    if request.max_wait_s is not None and not request.max_wait_s >= 0:
        raise UsageError(
            f"max_wait_s {request.max_wait_s} is not a number of seconds >= 0", hint="e.g. 600; 0 waits without limit"
        )
    with tempfile.TemporaryDirectory(prefix="expkit-doctor-") as tmp:
        out = Path(tmp) / "events.jsonl"
        t0 = time.perf_counter()
        try:
            proc = subprocess.Popen(
                list(request.command),
                cwd=request.cwd,
                env=_child_env(request, out),
                stdout=2 if request.stdout_to_stderr else None,
                start_new_session=True,  # its own process group: --max-wait stops every process it started
            )
        except OSError as exc:
            raise UsageError(
                f"could not start {request.command[0]!r}: {exc.strerror}", hint="check the command after --"
            ) from None
        code, timed_out = _wait(proc, out, request.max_wait_s)
        result = summarize_events(request, read_events(out), code, time.perf_counter() - t0, timed_out)
    run_dir = run_dir_from_environment({**os.environ, **request.env})
    if run_dir is not None and result.armed:  # under `runs exec`: every rank's findings, merged
        write_run_record(
            run_dir,
            findings=[f.to_json() for f in result.findings],
            steps_watched=result.steps_watched,
            source="expkit doctor",
        )
    return result
