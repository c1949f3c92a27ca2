"""The root command: entry points, the error boundary and a light start-up."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import typer

from expkit.errors import CheckFailed, InputError


def test_python_dash_m_runs_the_cli():
    res = subprocess.run(
        [sys.executable, "-m", "expkit", "stats", "ci", "-k", "1", "-n", "4", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    assert '"estimate": 0.25' in res.stdout


def test_help_does_not_import_heavy_libraries():
    # `expkit --help` and `expkit stats ci` must answer in well under a second: torch (~1-2 s),
    # transformers, peft, trl (~8 s) may only be imported by the commands that use them.
    code = (
        "import sys; from expkit.cli.app import app\n"
        "from typer.testing import CliRunner\n"
        "CliRunner().invoke(app, ['--help']); CliRunner().invoke(app, ['stats', 'ci', '-k', '1', '-n', '2'])\n"
        "heavy = [m for m in ('torch', 'transformers', 'peft', 'trl', 'datasets', 'mlflow', 'matplotlib', 'pandas')"
        " if m in sys.modules]\n"
        "print(','.join(heavy))"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "", f"imported at start-up: {res.stdout.strip()}"


@pytest.fixture
def boundary_app():
    """A throwaway app with the same error boundary, to drive each kind of failure."""
    from expkit.cli.app import _ErrorBoundary

    app = typer.Typer(cls=_ErrorBoundary, pretty_exceptions_enable=False)

    @app.command()
    def fail(kind: str) -> None:
        if kind == "input":
            raise InputError("field 'score' is not a number", path="res.jsonl", line=17, hint="fix the row")
        if kind == "check":
            raise CheckFailed("max error 3e-3 over tolerance 1e-6")
        if kind == "interrupt":
            raise KeyboardInterrupt
        raise RuntimeError("a bug")

    @app.command()
    def other() -> None:
        pass

    return app


def test_error_boundary_exit_codes(boundary_app):
    from typer.testing import CliRunner

    runner = CliRunner()
    res = runner.invoke(boundary_app, ["fail", "input"])
    assert res.exit_code == 2
    assert res.stderr.strip() == "error: res.jsonl:17: field 'score' is not a number; fix the row"
    res = runner.invoke(boundary_app, ["fail", "check"])
    assert res.exit_code == 1 and "over tolerance" in res.stderr
    res = runner.invoke(boundary_app, ["fail", "bug"])
    # not an ExpkitError: our bug: the traceback, one line asking for a report, exit 3 (not 1, a failed check)
    assert res.exit_code == 3
    assert "Traceback (most recent call last)" in res.stderr and "RuntimeError: a bug" in res.stderr
    assert "internal error" in res.stderr and "report" in res.stderr
    res = runner.invoke(boundary_app, ["fail", "interrupt"])
    assert res.exit_code == 130 and "interrupted" in res.stderr


def test_json_envelope_for_results_and_errors():
    from typer.testing import CliRunner

    from expkit import __version__
    from expkit.cli.app import app

    runner = CliRunner()
    ok = runner.invoke(app, ["stats", "ci", "--correct", "40", "--n", "80", "--method", "wald", "--json"])
    data = json.loads(ok.stdout)
    assert ok.exit_code == 0 and data["command"] == "stats ci" and data["version"] == __version__
    assert abs(data["result"]["half_width"] - 0.10956531757207266) < 1e-12  # seed C2.2: 1.96*sqrt(.25/80)
    bad = runner.invoke(app, ["stats", "ci", "--correct", "81", "--n", "80", "--json"])
    err = json.loads(bad.stdout)
    assert bad.exit_code == 2 and err["command"] == "stats ci" and "result" not in err
    assert err["error"]["kind"] == "UsageError" and "81" in err["error"]["message"]


def test_json_envelope_error_names_the_file_and_line(tmp_path):
    from typer.testing import CliRunner

    from expkit.cli.app import app

    p = tmp_path / "res.jsonl"
    p.write_text('{"model": "a", "item": 1, "score": 1}\n{"model": "a", "item": 2, "score": "x"}\n')
    res = CliRunner().invoke(app, ["stats", "table", str(p), "--json"])
    err = json.loads(res.stdout)["error"]
    assert res.exit_code == 2 and err["kind"] == "InputError" and err["where"] == f"{p}:2"


def test_unexpected_error_prints_traceback_from_the_console_script(tmp_path):
    code = (
        "import typer, sys\n"
        "from expkit.cli.app import _ErrorBoundary\n"
        "app = typer.Typer(cls=_ErrorBoundary, pretty_exceptions_enable=False)\n"
        "@app.command()\n"
        "def boom(): raise ZeroDivisionError('bug')\n"
        "@app.command()\n"
        "def other(): pass\n"
        "app()\n"
    )
    res = subprocess.run([sys.executable, "-c", code, "boom"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 3
    assert "Traceback (most recent call last)" in res.stderr and "ZeroDivisionError: bug" in res.stderr


def test_closed_pipe_is_not_an_internal_error():
    # `expkit labs list --json | head -1`: the reader has gone; no traceback, SIGPIPE's shell code
    import os

    r, w = os.pipe()
    os.close(r)  # nobody reads: the first write raises BrokenPipeError
    proc = subprocess.run(
        [sys.executable, "-m", "expkit", "labs", "list", "--json"], stdout=w, stderr=subprocess.PIPE, timeout=60
    )
    os.close(w)
    assert b"Traceback" not in proc.stderr and b"internal error" not in proc.stderr, proc.stderr
    assert proc.returncode == 141
