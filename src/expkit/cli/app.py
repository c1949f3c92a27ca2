"""The ``expkit`` root command and its one error boundary.

Exit codes: 0 success, 1 a check that ran and failed (``CheckFailed``), 2 bad usage or input (any other
``ExpkitError``, printed as one line without traceback). Anything else is a bug: full traceback.
Command modules import torch, transformers and friends inside the command bodies only, so
``expkit --help`` stays well under a second.
"""

from __future__ import annotations

import sys
from typing import Any

import typer
from typer.core import TyperGroup

from expkit import __version__
from expkit.errors import ExpkitError

__all__ = ["app", "main"]


class _ErrorBoundary(TyperGroup):
    """Turns an ExpkitError raised anywhere below into one line on stderr and its exit code."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except ExpkitError as exc:
            hint = f"; {exc.hint}" if exc.hint else ""
            print(f"error: {exc.message}{hint}", file=sys.stderr)
            ctx.exit(exc.exit_code)


app = typer.Typer(
    cls=_ErrorBoundary,
    name="expkit",
    help="The algorithm engineer's toolbox: from an ML idea to a runnable, recorded, trustworthy experiment.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        print(f"expkit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    """expkit: tools for your own data, evals, models and runs; labs that measure each claim of the field guide.

    Examples:

      expkit stats ci --correct 40 --n 80 --method wald

      expkit labs run --quick --out report
    """


# One line per command module; each module's ``register(app)`` adds its group or command.
_COMMAND_MODULES = (
    "expkit.cli.labs",
    "expkit.cli.stats",
    "expkit.cli.check",
    "expkit.cli.plot",
    "expkit.cli.why",
    "expkit.cli.data",
    "expkit.cli.train",
    "expkit.cli.runs",
    "expkit.cli.sft",
    "expkit.cli.roofline",
    "expkit.cli.profile",
    "expkit.cli.mem",
)


def _register() -> None:
    import importlib

    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(app)


_register()


def main() -> None:
    """Console-script entry point."""
    app()
