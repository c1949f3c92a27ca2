"""Fixtures shared by the code-record tests (tests/runs/test_runs_codecache.py, test_runs_review.py)."""

from __future__ import annotations

import pytest

from expkit.runs import codecache, codestate


@pytest.fixture
def counted(monkeypatch):
    """How many records were taken from git (``_capture_code_now`` calls), with an empty cache; racy window
    off: files here are written milliseconds before the capture, and each change moves its mtime on itself."""
    monkeypatch.setattr(codecache, "RACY_NS", 0)
    monkeypatch.setattr(codecache, "_KEPT", {})
    calls = []
    real = codestate._capture_code_now

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(codestate, "_capture_code_now", counting)
    return calls
