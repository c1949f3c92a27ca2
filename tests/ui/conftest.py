"""Fixtures of the web view's tests: ``make_server(UiConfig)`` starts a real uvicorn on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from uiserver import Served, serve_in_thread

from expkit.ui import UiConfig


@pytest.fixture
def make_server() -> Iterator[object]:
    """Call with a UiConfig; every server started is stopped at the end of the test."""
    running: list[Iterator[Served]] = []

    def start(config: UiConfig) -> Served:
        gen = serve_in_thread(config)
        running.append(gen)
        return next(gen)

    yield start
    for gen in running:
        for _ in gen:  # runs the finally block
            pass
