"""The ``expkit`` root command and its one error boundary.

Exit codes, as pytest has them: 0 success; 1 a check that ran and failed (``CheckFailed``); 2 bad usage
or input (any other ``ExpkitError``, printed as one line without traceback); 3 an internal error (a bug
in expkit: the traceback, then one line asking for a report); 130 interrupted (Ctrl-C); 141 when stdout's
reader went away (``| head``), as a shell reports a writer killed by SIGPIPE.
With ``--json`` an error is also written to stdout as ``{"command", "version", "error": {kind, message,
where}}`` with the same exit code.
Command modules import torch, transformers and friends inside the command bodies only, so
``expkit --help`` stays well under a second.
"""

from __future__ import annotations

import errno
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

import typer
from typer import rich_utils
from typer.core import TyperGroup

from expkit import __version__
from expkit.errors import ExpkitError, InputError, missing_dependency

__all__ = ["EXIT_BROKEN_PIPE", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "app", "invoked_argv", "main"]

EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what a shell reports for a writer whose reader closed the pipe
_REPORT_URL = "https://github.com/expkit/expkit/issues"


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush into the closed pipe raises nothing."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (a test's capture): nothing to flush
        pass


def _wants_json(argv: Sequence[str]) -> bool:
    """``--json`` among the options, not among the arguments of a wrapped command after ``--``."""
    head = argv[: argv.index("--")] if "--" in argv else argv
    return "--json" in head


def invoked_argv(ctx: Any) -> list[str]:
    """The arguments of the running ``expkit`` invocation as the user typed them, ``--`` included (click
    drops it while parsing; ``expkit profile`` needs to know whether it was there). ``ctx``: the command's
    ``typer.Context``."""
    root = ctx.find_root().command
    argv = getattr(root, "_argv", None)
    return list(argv) if argv is not None else sys.argv[1:]


# OSErrors that say a given path cannot be used as it is (not found, a folder where a file was meant or
# the reverse, no permission, a read-only or full disk, a name too long). Commands name such paths
# themselves where they can; this catches the rest at the boundary instead of showing a traceback.
_PATH_ERRNOS = frozenset(
    {
        errno.ENOENT,
        errno.EISDIR,
        errno.ENOTDIR,
        errno.EEXIST,
        errno.EACCES,
        errno.EPERM,
        errno.EROFS,
        errno.ENOSPC,
        errno.ENAMETOOLONG,
        errno.ELOOP,
    }
)


# A write that the machine refused: a full disk, a quota, a file-size limit (`ulimit -f`: Python ignores
# SIGXFSZ, so the write raises EFBIG). A failed write() carries no filename (stdout, an open file), so these
# are reported with or without one (issue 21: they were tracebacks, exit 3).
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT})


def _write_refused(exc: OSError) -> InputError:
    where = exc.filename if isinstance(exc.filename, str) else None
    what = exc.strerror or type(exc).__name__
    return InputError(
        f"could not write the output: {what} (errno {errno.errorcode.get(exc.errno or 0, exc.errno)})",
        path=where,
        hint="free space on the disk, raise the file-size limit (ulimit -f) or write somewhere else; "
        "what was already recorded is kept",
    )


def _path_error(exc: OSError) -> InputError | None:
    """The one-line InputError for an OSError about a named path or a refused write; None for any other
    OSError (a bug)."""
    if exc.errno in _WRITE_ERRNOS:
        return _write_refused(exc)
    if exc.errno not in _PATH_ERRNOS or exc.filename is None:
        return None
    name = exc.filename if isinstance(exc.filename, str) else os.fsdecode(exc.filename)
    if len(name) > 200:
        name = name[:100] + "..." + name[-60:]
    what = exc.strerror or type(exc).__name__
    if exc.errno == errno.EEXIST and os.path.isfile(name):  # mkdir through a regular file
        what = "a regular file where a folder is needed"
    return InputError(f"{what} ({type(exc).__name__})", path=name, hint="check the path given on the command line")


def _is_click_control(exc: BaseException) -> bool:
    """Click's own exceptions (Exit, Abort, UsageError ...), whether click is imported as ``click`` or
    vendored by typer as ``typer._click``: they carry exit codes click handles itself."""
    if isinstance(exc, (typer.Exit, typer.Abort)):
        return True
    return any(
        t.__module__.split(".")[0] == "click" or t.__module__.startswith(("typer._click", "typer.exc"))
        for t in type(exc).__mro__
    )


_TYPER_HELP_WIDTH = rich_utils.MAX_WIDTH  # TERMINAL_WIDTH, as typer read it


class _ErrorBoundary(TyperGroup):
    """The one error boundary: every exception below becomes one exit code and, for ours, one line."""

    _argv: tuple[str, ...] = ()

    def main(self, args: Any = None, *a: Any, **kw: Any) -> Any:
        from expkit.cli.output import set_command_name
        from expkit.render.console import help_width, note_pipe_closed, pipe_closed, terminal_safe_streams

        note_pipe_closed(False)  # a new command (a test runs many in one process)
        # COLUMNS=99999999: typer's help console would lay out 10**8 columns a line; capped for this command only
        rich_utils.MAX_WIDTH = help_width() or _TYPER_HELP_WIDTH
        self._argv = tuple(sys.argv[1:] if args is None else args)
        set_command_name(self._command_from_argv())
        standalone = kw.get("standalone_mode", True)
        kw["standalone_mode"] = False  # click raises its usage errors to us instead of printing its box
        with terminal_safe_streams():  # nothing read from outside reaches the terminal as an escape sequence
            try:  # click's own handling (a 5-line usage box on a bad option) is replaced by ours below
                rv = super().main(args, *a, **kw)
                code = rv if isinstance(rv, int) else 0  # with standalone_mode=False, an Exit's code is returned
            except Exception as exc:
                if not _is_click_control(exc):
                    raise
                code = EXIT_BROKEN_PIPE if pipe_closed() else self._click_error(exc)
            except SystemExit:  # rich and click exit 1 when the pipe closes under them (`--help | head -1`)
                if not pipe_closed():
                    raise
        if pipe_closed():
            _silence_stdout()
            code = EXIT_BROKEN_PIPE
        if not standalone:
            return code
        sys.exit(code)

    def _click_error(self, exc: Any) -> int:
        """A usage error click raised while parsing (a bad option value, a missing argument, an unknown option
        or command) as one line on stderr, ``error: <what> (try `expkit CMD --help`)``, and in the --json error
        envelope; exit 2. ``Abort`` (Ctrl-D at a prompt) is ``Aborted!``, exit 1."""
        if not hasattr(exc, "format_message"):  # Abort
            print("Aborted!", file=sys.stderr)
            return 1
        if type(exc).__name__ == "NoArgsIsHelpError":  # `expkit stats` alone: typer printed its help already
            return int(exc.exit_code)
        from expkit.cli.output import command_name

        message = " ".join(str(exc.format_message()).split())
        ctx = getattr(exc, "ctx", None)
        names = [] if ctx is not None else [command_name()]  # no context (an option's missing value): the argv's
        while ctx is not None and ctx.parent is not None:  # the command path without the program's own name
            names.append(ctx.info_name)
            ctx = ctx.parent
        command = " ".join(["expkit", *reversed([n for n in names if n])])
        self._emit_error("UsageError", message, None)
        print(f"error: {message} (try `{command} --help`)", file=sys.stderr)
        return int(exc.exit_code)

    def _emit_error(self, kind: str, message: str, where: str | None) -> None:
        from expkit.cli.output import result_emitted

        if _wants_json(self._argv) and not result_emitted():
            from expkit.cli.output import command_name, print_json
            from expkit.render.jsonout import error_envelope

            try:
                print_json(error_envelope(command_name(), kind=kind, message=message, where=where))
            except OSError:  # stdout itself is what failed (a full disk): the stderr line and exit code remain
                _silence_stdout()

    def _command_from_argv(self) -> str:
        """``stats ci`` from ``stats ci -k 1 --json``: follow the group tree as far as the names go."""
        names: list[str] = []
        group: Any = self
        for token in self._argv:
            cmd = getattr(group, "commands", {}).get(token)
            if cmd is None:
                break
            names.append(token)
            group = cmd
        return " ".join(names)

    def _report(self, ctx: Any, exc: ExpkitError) -> None:
        hint = f"; {exc.hint}" if exc.hint else ""
        where = None
        if isinstance(exc, InputError) and exc.path is not None:
            where = ":".join(str(p) for p in (exc.path, exc.line) if p is not None)
        self._emit_error(type(exc).__name__, f"{exc.message}{hint}", where)
        print(f"error: {exc.message}{hint}", file=sys.stderr)
        ctx.exit(exc.exit_code)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except ExpkitError as exc:
            self._report(ctx, exc)
        except BrokenPipeError:  # (before OSError, its base) the reader went away (`expkit data head F | head`)
            _silence_stdout()
            ctx.exit(EXIT_BROKEN_PIPE)
        except OSError as exc:  # a path the user gave that cannot be used: one line naming it, exit 2
            bad_path = _path_error(exc)
            if bad_path is None:
                self._internal(ctx, exc)
            else:
                self._report(ctx, bad_path)
        except ImportError as exc:  # an optional package of the light install's missing extras: say which
            dep = missing_dependency(exc)
            if dep is None:
                self._internal(ctx, exc)
            else:
                self._report(ctx, dep)
        except KeyboardInterrupt:
            self._emit_error("Interrupted", "interrupted (Ctrl-C)", None)
            print("\ninterrupted", file=sys.stderr)
            ctx.exit(EXIT_INTERRUPTED)
        except Exception as exc:  # the boundary: anything not ours is our bug
            if _is_click_control(exc):  # --help, typer.Exit, a bad option: handled in main()
                raise
            self._internal(ctx, exc)

    def _internal(self, ctx: Any, exc: BaseException) -> None:
        traceback.print_exception(exc, file=sys.stderr)
        self._emit_error("internal", f"{type(exc).__name__}: {exc}", None)
        print(
            f"internal error: {type(exc).__name__} is a bug in expkit, not in your input; "
            f"please report it with the traceback above ({_REPORT_URL})",
            file=sys.stderr,
        )
        ctx.exit(EXIT_INTERNAL)


app = typer.Typer(
    cls=_ErrorBoundary,
    name="expkit",
    # no help= here: the root callback's docstring is the help, so `expkit --help` shows exit codes and --json
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

    Exit codes: 0 ok, 1 a check ran and failed, 2 bad usage or input, 3 internal error (a bug: please
    report it), 130 interrupted, 141 stdout's reader went away (| head). With --json every command prints
    one envelope, strict JSON for any text:
    {"command", "version", "result"} or {"command", "version", "error": {"kind", "message", "where"}}.

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
    "expkit.cli.sweep",
    "expkit.cli.compare",
    "expkit.cli.doctor",
    "expkit.cli.ui",
)


def _register() -> None:
    import importlib

    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(app)
    from expkit.cli.helptext import rewrap_help

    rewrap_help(app)  # help wraps at the terminal width, not at the docstrings' line breaks


_register()


def main() -> None:
    """Console-script entry point.

    A reader that stops early (``expkit runs ls --json | head``) closes the pipe: that is not an error
    of ours, so we stop quietly with the shell's code for SIGPIPE (141), as ``git`` and coreutils do,
    ``--help`` included. stdout is flushed here, where a closed pipe is still ours to report: in the
    interpreter's final flush it printed "Exception ignored ... BrokenPipeError" and exited 120.
    """
    from expkit.render.console import pipe_closed

    try:
        app()
        code: Any = 0
    except SystemExit as exc:
        code = exc.code
    except BrokenPipeError:
        code = EXIT_BROKEN_PIPE
    except OSError as exc:  # --help or --version printed into a full stdout (before any command's boundary)
        if exc.errno not in _WRITE_ERRNOS:
            raise
        _silence_stdout()
        print(f"error: cannot write standard output: {exc.strerror or exc}", file=sys.stderr)
        code = 2
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = EXIT_BROKEN_PIPE
    except OSError as exc:  # stdout refused what was printed (`> /dev/full`, a full disk): the output is lost
        _silence_stdout()  # the interpreter's own flush would fail again
        print(f"error: cannot write standard output: {exc.strerror or exc}", file=sys.stderr)
        if code in (0, None):  # a success whose output nobody got is not a success (cat, git: non-zero)
            code = 2
    except ValueError:  # stdout closed by the command: the exit code already says what happened
        pass
    if code == EXIT_BROKEN_PIPE or pipe_closed():
        _silence_stdout()  # Python would complain again while flushing stdout at exit
        code = EXIT_BROKEN_PIPE
    sys.exit(code)
