"""Many real ``expkit`` processes for the price of one import: an interpreter imports expkit once and forks a
child per case; the child runs ``main()`` with its own stdout and stderr files (or a pipe whose reader is
gone), flushes stdout as the interpreter's last step does (where "Exception ignored ... BrokenPipeError" and
exit 120 came from) and ends with ``os._exit``, skipping a teardown that costs more than the command."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

_DRIVER = textwrap.dedent(
    """
    import json, os, signal, sys
    from expkit.cli.app import main

    def child(argv, out, errpath):
        os.dup2(out, 1)
        os.dup2(os.open(errpath, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
        sys.argv = ["expkit", *argv]
        code = 0
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        try:
            sys.stdout.flush()
        except Exception as exc:
            sys.stderr.write(f"Exception ignored while flushing sys.stdout: {exc!r}\\\\n")
            code = 120
        sys.stderr.flush()
        os._exit(code)

    cases, folder, closed, timeout = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3] == "1", float(sys.argv[4])
    results = []
    for start in range(0, len(cases), 4):  # four children at a time
        running = []
        for i in range(start, min(start + 4, len(cases))):
            if closed:
                r, out = os.pipe()
                os.close(r)  # the reader is gone before the child writes
            else:
                out = os.open(os.path.join(folder, f"{i}.out"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            pid = os.fork()
            if pid == 0:
                signal.alarm(int(timeout))  # a hang ends as SIGALRM (-14), not as a stuck test
                child(cases[i], out, os.path.join(folder, f"{i}.err"))
            os.close(out)
            running.append((i, pid))
        for i, pid in running:
            code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            read = lambda name: open(name, errors="replace").read() if os.path.exists(name) else ""
            base = os.path.join(folder, str(i))
            results.append([cases[i], code, read(base + ".out")[-4000:], read(base + ".err")[-4000:]])
    print(json.dumps(results))
    """
)


@dataclass(frozen=True)
class Ran:
    argv: list[str]
    code: int
    stdout: str
    stderr: str


def run_many(cases: list[list[str]], folder: Path, *, reader_closed: bool = False, timeout_s: int = 60) -> list[Ran]:
    """Run ``expkit ARGV`` for each case in its own process; each one past ``timeout_s`` ends with -14."""
    folder.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(
        [sys.executable, "-c", _DRIVER, json.dumps(cases), str(folder), "1" if reader_closed else "0", str(timeout_s)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=folder,
        stdin=subprocess.DEVNULL,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return [Ran(*row) for row in json.loads(res.stdout.splitlines()[-1])]


def one_line_or_result(ran: Ran) -> list[str]:
    """The problems of a case that must end as a result (0, 1) or one error line (2): none when clean."""
    problems = []
    if ran.code not in (0, 1, 2):
        problems.append(f"exit {ran.code}")
    if "Traceback" in ran.stderr or "Exception ignored" in ran.stderr:
        problems.append("traceback")
    lines = [x for x in ran.stderr.splitlines() if x.strip()]
    if ran.code == 2 and (len(lines) != 1 or not lines[0].startswith("error: ")):
        problems.append(f"not one error line: {lines[-3:]}")
    return problems
