"""The library names a bad value by its field (``watch_steps 0 ...``); the user typed a flag (``--steps``)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from expkit.errors import UsageError

__all__ = ["fields_as_flags"]


@contextmanager
def fields_as_flags(flags: Mapping[str, str]) -> Iterator[None]:
    """A UsageError whose message starts with one of ``flags``' field names names the flag instead.

    Example:
        >>> with fields_as_flags({"watch_steps": "--steps"}):  # doctest: +SKIP
        ...     run_doctor(request)
    """
    try:
        yield
    except UsageError as exc:
        field = re.match(r"(\w+)[ =:]", exc.message)
        if field is None or field.group(1) not in flags:
            raise
        raise UsageError(flags[field.group(1)] + exc.message[len(field.group(1)) :], hint=exc.hint) from None
