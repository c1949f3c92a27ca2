"""A real uvicorn server of ``expkit ui`` on a free loopback port and a small store with hostile values, for the
server and browser tests (imported by name: tests/ui is on sys.path as pytest inserts a test's folder)."""

from __future__ import annotations

import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("starlette")
uvicorn = pytest.importorskip("uvicorn")

from expkit.ui import UiConfig, create_app  # noqa: E402


class Served:
    """A running server: ``url`` of its root; ``get`` returns (status, body) without raising on 4xx/5xx."""

    def __init__(self, url: str) -> None:
        self.url = url

    def request(self, path: str, method: str = "GET") -> tuple[int, bytes]:
        req = urllib.request.Request(self.url + path, method=method)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def get(self, path: str) -> tuple[int, bytes]:
        return self.request(path)


def serve_in_thread(config: UiConfig) -> Iterator[Served]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(config), log_level="warning", access_log=False))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60  # generous: the suite must pass on a loaded machine
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "uvicorn did not start within 60 s"
    try:
        yield Served(f"http://127.0.0.1:{port}")
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def write_store(root: Path) -> dict[str, str]:
    """A small store: a 2 x 2 group ``grid`` (lr 0.1 / 0.3, seeds 0 / 1, 30 steps, seed noise) and one run
    whose config, metric name and log carry HTML and script (``evil``). Returns name -> id."""
    import math

    import expkit.runs as runs

    ids = {}
    for lr in (0.1, 0.3):
        for seed in (0, 1):
            name = f"lr{lr}-s{seed}"
            with runs.start(
                config={"lr": lr, "training_args": {"bs": 8, "warmup": 10, "learning_rate": lr}},
                seed=seed,
                store=root,
                name=name,
                group="grid",
            ) as run:
                for step in range(1, 31):
                    run.log(step, loss=(1 + lr) / math.sqrt(step) + 0.013 * seed * (1 + step % 3))
                ids[name] = run.id
    with runs.start(config={"note": EVIL_SCRIPT, EVIL_KEY: 1}, seed=0, store=root, name="evil", group="evil") as run:
        run.log(1, **{EVIL_METRIC: 1.0})
        ids["evil"] = run.id
    return ids


EVIL_SCRIPT = "<script>window.__pwned = 1</script>"
EVIL_KEY = "<img src=x onerror='window.__pwned=2'>"
EVIL_METRIC = '<b onmouseover="window.__pwned=3">m</b>'
