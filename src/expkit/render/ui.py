"""What `expkit ui` says on the terminal while it serves: the address, and a warning when it is exposed."""

from __future__ import annotations

from pathlib import Path

from expkit.render.console import err_console

__all__ = ["say_exposed", "say_serving"]


def say_exposed(host: str, store: Path) -> None:
    """Warn, on stderr, that a host other than loopback lets anyone on that network read the store."""
    err_console().print(f"warning: serving on {host}: anyone on that network can read {store}", markup=False)


def say_serving(url: str) -> None:
    """The one line a user needs once the server listens: where to point the browser, and how to stop."""
    err_console().print(f"expkit ui: {url} (Ctrl-C stops)", markup=False)
