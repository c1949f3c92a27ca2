"""Real logs around a traceback: strip terminal escape sequences and per-line prefixes (timestamps,
logger names and levels, glog headers, ``[rankN]:``, Slurm's ``srun --label`` task numbers) so the
traceback parser sees Python's own lines; rewrite an IPython/Jupyter traceback (``Cell In[3], line 5``,
``File ~/m.py:42, in f(x)``, ``----> 42 code``) in Python's own layout; and make any text safe to print
back to a terminal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CleanLog", "clean_log_text", "ipython_as_python", "sanitize_for_terminal", "strip_ansi"]

# ECMA-48: CSI (ESC [ ... final byte, or the 8-bit CSI 0x9b), OSC (ESC ] ... BEL or ESC \), other
# two-byte escapes (ESC followed by one byte in @-Z, \, ], ^, _ and the charset selectors).
_ANSI = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"
    r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|\x1b[()*+][0-9A-Za-z]|\x1b[0-~]"
)  # then any other escape: ESC c (reset), ESC 7 ...
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

_LEVEL = r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL|TRACE|NOTSET)"
# torchrun's [rankN]: / [defaultN]:, and srun --label's "N: " (at most one space before it: an indented
# code line such as "    1: 'a'," in a dict literal is not a task number)
_RANK = re.compile(r"\[(?:rank|default)(\d+)\]:\s?| ?(\d{1,5}): ")
# Each prefix is matched at the start of a line and removed; several can follow one another
# ("2026-01-01 10:00:00,123 - root - ERROR - Traceback ..."). Only shapes loggers print are listed:
# a traceback's own lines (exception types, 'File "..."', indented code) never match them.
_PREFIX_SHAPES = tuple(
    (
        r"\[\d{3,}\]\s+",  # a pid or line counter some collectors add: [80746]
        # ISO-like date and time, bracketed or not, with a zone: 2026-11-30T21:17:37.123Z, [2026-11-30 21:17:37,123]
        r"\[?\d{4}[-/]\d{2}[-/]\d{2}[T _]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2}| ?UTC)?\]?"
        r"(?:\s*[-|:]\s+|\s+|(?=\[))",
        r"\d{2}/\d{2}/\d{4} \d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:\s+-\s+|\s+)",  # HF examples: 11/30/2026 21:17:37 - INFO -
        r"\[?\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\]?\s+",  # a time alone
        # glog (PyTorch's C++ and torchelastic):
        # [E1130 21:17:37.123456789 ProcessGroupNCCL.cpp:616], E1130 ... api.py:869]
        r"\[?[IWEF]\d{3,4} \d{2}:\d{2}:\d{2}\.\d+\s+(?:\d+\s+)?[\w./<>-]+:\d+\]\s*",
        r"\[[IWEF] [\w./<>-]+:\d+\]\s*",  # older glog: [E ProcessGroupNCCL.cpp:737]
        r"(?:stdout|stderr) [FP] ",  # Kubernetes CRI log lines after their timestamp
        _LEVEL + r":[\w.<>-]*:",  # logging.basicConfig: INFO:root:, ERROR:__main__:
        r"\[" + _LEVEL + r"(?:\|[^\]]*)?\]\s*(?:>>\s*|-\s+)?",  # [INFO], [INFO|trainer.py:2345] (transformers)
        r"\[[\w.<>-]+\](?=\[)",  # Hydra's job logging: [2026-...][__main__][ERROR] - (the logger name)
        r"-?\s*(?:[\w.<>]+\s+-\s+)?"
        + _LEVEL
        + r"\s+-\s+(?:[\w.<>]+\s+-\s+)?",  # - root - ERROR - / - INFO - __main__ -
        r">>\s+",
        _LEVEL + r"\s+(?=\S)",  # a bare level word after a timestamp: 2026-... ERROR Traceback
    )
)
# one alternation, tried in the order above (the first shape that matches wins): one regex call per prefix
_PREFIX = re.compile("|".join(f"(?:{shape})" for shape in _PREFIX_SHAPES))
_MAX_PREFIXES = 8


@dataclass(frozen=True)
class CleanLog:
    """The text with escape sequences and line prefixes removed (``[rankN]:`` kept first on its line,
    where the rank splitter looks for it), and how many lines were changed."""

    text: str
    lines_with_escapes: int
    lines_with_prefixes: int


def strip_ansi(text: str) -> str:
    """Remove terminal escape sequences (colours, cursor moves, titles).

    Example:
        >>> strip_ansi("\\x1b[31mRuntimeError\\x1b[0m: boom")
        'RuntimeError: boom'
    """
    return _ANSI.sub("", text)


def sanitize_for_terminal(text: str) -> str:
    """``text`` safe to print: escape sequences removed, other control characters (bell, backspace,
    carriage return, C1 codes) shown as ``\\xNN``; newlines and tabs kept.

    Example:
        >>> sanitize_for_terminal("ok\\x1b]0;pwned\\x07 \\x08done")
        'ok \\\\x08done'
    """
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", strip_ansi(text))


def _clean_line(line: str) -> tuple[str, bool]:
    if "\r" in line:  # progress bars redraw with carriage returns: what the terminal showed last
        parts = [p for p in line.split("\r") if p.strip()]
        line = parts[-1] if parts else ""
    rank = None
    changed = False
    for _ in range(_MAX_PREFIXES):
        m = _RANK.match(line)
        if m:
            rank, line = m.group(1) or m.group(2), line[m.end() :]
            continue
        m = _PREFIX.match(line)
        if not m or not m.end():
            break
        line, changed = line[m.end() :], True
    return (f"[rank{rank}]:{line}" if rank is not None else line), changed


# IPython 8 (Jupyter, ipython): "ValueError      Traceback (most recent call last)", frames as
# "Cell In[3], line 5[, in f(x)]" or "File ~/m.py:42, in Cls.f(self, x)", the failing line as "----> 42 code"
_IPY_HEADER = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)\s+Traceback \(most recent call last\)\s*$", re.MULTILINE)
_IPY_CELL = re.compile(r"^Cell (?P<cell>In\s?\[\d*\]), line (?P<line>\d+)(?:, in (?P<func>.+))?\s*$")
_IPY_FILE = re.compile(r"^File (?P<file>.+?):(?P<line>\d+)(?:, in (?P<func>.+))?\s*$")
_IPY_ARROW = re.compile(r"^-*>\s*\d+\s?(?P<code>.*)$")
_IPY_CONTEXT = re.compile(r"^\s+\d+(?:\s|$)|^\[\.\.\. skipping hidden \d+ frames?\]\s*$")


def _ipy_function(func: str | None) -> str:
    """``Module._call_impl(self, *args)`` -> ``_call_impl``: the name Python's own traceback shows."""
    if not func:
        return "<module>"
    return func.split("(", 1)[0].strip().rsplit(".", 1)[-1] or "<module>"


def ipython_as_python(text: str) -> str:
    """An IPython/Jupyter traceback rewritten in Python's own layout, so the parser reads its frames; other
    lines are kept. Context lines around the failing one are dropped.

    Example:
        >>> print(ipython_as_python("ValueError    Traceback (most recent call last)\\nCell In[2], line 3\\n"
        ...                         "      1 x = 1\\n----> 3 f(x)\\n\\nValueError: bad"))
        Traceback (most recent call last):
          File "<cell In[2]>", line 3, in <module>
            f(x)
        ValueError: bad
    """
    out: list[str] = []
    in_tb = False
    for line in text.split("\n"):
        if _IPY_HEADER.match(line):
            out.append("Traceback (most recent call last):")
            in_tb = True
            continue
        if not in_tb:
            out.append(line)
            continue
        if m := _IPY_CELL.match(line):
            out.append(f'  File "<cell {m["cell"]}>", line {m["line"]}, in {_ipy_function(m["func"])}')
        elif m := _IPY_FILE.match(line):
            out.append(f'  File "{m["file"]}", line {m["line"]}, in {_ipy_function(m["func"])}')
        elif m := _IPY_ARROW.match(line):
            out.append(f"    {m['code'].strip()}")
        elif _IPY_CONTEXT.match(line) or not line.strip() or set(line.strip()) == {"-"}:
            continue
        else:  # the exception line, or a chaining sentence: as printed
            out.append(line)
    return "\n".join(out)


def clean_log_text(text: str) -> CleanLog:
    """Prepare a log for the traceback parser: per line, escape sequences out, then logger prefixes out.

    Example:
        >>> clean_log_text("2026-11-30 10:00:01,002 - root - ERROR - Traceback (most recent call last):").text
        'Traceback (most recent call last):'
        >>> clean_log_text("[2026-11-30 10:00:01][INFO] [rank1]: ValueError: x").text
        '[rank1]:ValueError: x'
    """
    out = []
    n_esc = n_pre = 0
    # split on newlines only: a lone carriage return is a redraw within the line (see _clean_line)
    body = text.replace("\r\n", "\n")
    for raw in (body[:-1] if body.endswith("\n") else body).split("\n"):
        line = raw
        if "\x1b" in raw or "\x9b" in raw or "\x9d" in raw:
            line = strip_ansi(raw)
            n_esc += line != raw
        line, changed = _clean_line(line)
        n_pre += changed
        out.append(line)
    # control characters out (newlines and tabs kept) in one pass over the whole text
    joined = _CONTROL.sub("", "\n".join(out).replace("\t", "    "))
    if _IPY_HEADER.search(joined):
        joined = ipython_as_python(joined)
    return CleanLog(joined + ("\n" if text.endswith("\n") else ""), n_esc, n_pre)
