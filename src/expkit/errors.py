"""The exceptions expkit raises on purpose.

Every one of them is an ``ExpkitError``; the CLI prints such an error as one line (what went wrong,
where, what to do) with no traceback. Anything that is *not* an ``ExpkitError`` is a bug in expkit
and is shown with its full traceback.

::

    ExpkitError                 exit 2 unless stated
    ├── UsageError              a bad argument value or combination
    ├── InputError              bad user data: a file, a line, a field (carries file:line)
    ├── MissingDependency       an optional package or tool is not installed
    ├── CheckFailed             a check ran and failed (exit 1): over tolerance, a model that does not stop
    └── LabError                a lab could not run (shown as failed in the report)

``require("torch")`` imports an optional package or raises ``MissingDependency`` naming the extra to
install (``pip install 'expkit[torch]'``); the CLI's error boundary does the same for an ``ImportError`` of
any package in ``EXTRA_OF_PACKAGE`` raised deeper down, so the light install never shows a traceback.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

__all__ = [
    "EXTRA_OF_PACKAGE",
    "CheckFailed",
    "ExpkitError",
    "InputError",
    "LabError",
    "MissingDependency",
    "UsageError",
    "missing_dependency",
    "require",
]


class ExpkitError(Exception):
    """Base of every error expkit raises on purpose.

    Args:
        message: what is wrong, naming the bad value.
        hint: what the user should do about it.
    """

    exit_code: int = 2

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class UsageError(ExpkitError):
    """A bad argument value or combination, e.g. ``--correct 81 --n 80``."""


class InputError(ExpkitError):
    """Bad user data. ``path`` and ``line`` (1-based) say where, when known."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        column: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        self.column = column
        where = ":".join(str(p) for p in (self.path, line, column) if p is not None)
        super().__init__(f"{where}: {message}" if where else message, hint=hint)


class MissingDependency(ExpkitError):
    """An optional package or external tool is needed and absent."""


class CheckFailed(ExpkitError):
    """A check ran and its result is a failure. The CLI exits 1, not 2."""

    exit_code = 1


class LabError(ExpkitError):
    """A lab could not run; the report shows it as failed and the other labs still run."""


# Which extra of ``pip install 'expkit[EXTRA]'`` brings each optional package (pyproject.toml's
# [project.optional-dependencies]; tests/test_errors.py checks the two agree).
EXTRA_OF_PACKAGE = {
    "torch": "torch",
    "safetensors": "torch",
    "transformers": "hf",
    "peft": "hf",
    "trl": "hf",
    "datasets": "hf",
    "tokenizers": "hf",
    "accelerate": "hf",
    "mlflow": "mlflow",
    "tensorboard": "tensorboard",
    "ray": "ray",
    "lightning": "lightning",
    "starlette": "ui",
    "uvicorn": "ui",
    "jinja2": "ui",
    "tsdownsample": "ui",
}


_LIGHT_HINT = "the light install (pip install expkit) has stats, data, why, runs and check without torch"


def _needs(package: str, extra: str) -> MissingDependency:
    return MissingDependency(
        f"needs {package}, which is not installed: pip install 'expkit[{extra}]'", hint=_LIGHT_HINT
    )


def missing_dependency(exc: ImportError) -> MissingDependency | None:
    """The ``MissingDependency`` for an ImportError of an optional package (None for any other import:
    a missing core package or a bug stays what it is)."""
    top = (getattr(exc, "name", None) or "").split(".")[0]
    extra = EXTRA_OF_PACKAGE.get(top)
    return None if extra is None else _needs(top, extra)


def require(module: str, *, extra: str | None = None) -> ModuleType:
    """Import an optional ``module`` or say which extra to install.

    Args:
        module: e.g. ``"torch"`` or ``"transformers"``.
        extra: the pip extra that brings it (default: looked up in ``EXTRA_OF_PACKAGE``).

    Raises:
        MissingDependency: the module (or an optional package it needs) is not installed; exit 2 with
            "needs torch, which is not installed: pip install 'expkit[torch]'".

    Example:
        >>> require("numpy").__name__
        'numpy'
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        name = extra or EXTRA_OF_PACKAGE.get(top)
        if name is None:
            raise
        raise _needs(top, name) from exc
