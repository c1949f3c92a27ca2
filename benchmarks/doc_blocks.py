"""Benchmark figures into the docs: a page's block between ``<!-- BEGIN BENCHMARK: name (command; do not edit by
hand) -->`` and ``<!-- END BENCHMARK: name -->`` is rewritten by the benchmark run that measured it, so the page
quotes the benchmark's output instead of figures typed from it (``expkit.cli.docs`` generates the blocks named
``BEGIN GENERATED`` from the code; these come from a measurement and change only when it is run again)."""

from __future__ import annotations

import re
from pathlib import Path


def write_block(page: Path, name: str, command: str, text: str) -> None:
    """Replace the block ``name`` of ``page`` with ``text``, its begin marker naming ``command``.

    Raises:
        ValueError: the page has no markers for ``name`` (naming the two lines to add).
    """
    begin = f"<!-- BEGIN BENCHMARK: {name} ({command}; do not edit by hand) -->"
    end = f"<!-- END BENCHMARK: {name} -->"
    old = page.read_text(encoding="utf-8")
    pattern = re.compile(rf"<!-- BEGIN BENCHMARK: {re.escape(name)} .*?-->\n.*?{re.escape(end)}", re.S)
    if pattern.search(old) is None:
        raise ValueError(f"{page}: no markers for the benchmark block {name!r}: add '{begin}' and '{end}'")
    page.write_text(pattern.sub(lambda _: f"{begin}\n{text.strip()}\n{end}", old, count=1), encoding="utf-8")
    print(f"{page}: rewrote the benchmark block {name}")
