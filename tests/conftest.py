"""Shared test fixtures: run the CLI in-process and get exit code, stdout and stderr apart."""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass

# The Hugging Face Hub cannot be reached here: every test runs offline, as CI does.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")

import pytest

# A suite started as a background job of a non-interactive shell (`make test &`, nohup) inherits SIGINT
# ignored, and so would every process it starts: the Ctrl-C tests would then see commands that cannot be
# interrupted. A Python handler here is reset to the default at exec, so the commands under test get the
# SIGINT a terminal gives them.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@dataclass(frozen=True)
class CliResult:
    exit_code: int
    stdout: str
    stderr: str
    exception: BaseException | None


@pytest.fixture
def cli():
    """``cli("stats", "ci", "--n", "80", ...)`` -> CliResult (in-process, like a user at a shell)."""
    from typer.testing import CliRunner

    from expkit.cli.app import app

    runner = CliRunner()

    def invoke(*args: str, input: str | None = None) -> CliResult:
        res = runner.invoke(app, list(args), input=input)
        exc = res.exception if not isinstance(res.exception, SystemExit) else None
        return CliResult(res.exit_code, res.stdout, res.stderr, exc)

    return invoke
