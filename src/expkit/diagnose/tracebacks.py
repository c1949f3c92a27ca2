"""Parse a Python traceback from text (a log, a paste, ``torchrun`` output) into frames and exceptions.

The parser is best effort by design: mangled indentation, a paste cut in the middle or log prefixes
give a partial result with a warning, never an exception.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Literal

__all__ = [
    "ExceptionRecord",
    "Frame",
    "FrameKind",
    "Traceback",
    "classify_frame",
    "parse_traceback",
]

FrameKind = Literal["yours", "framework", "stdlib"]
Link = Literal["context", "cause", "worker"]

# Packages whose frames are "framework": the machinery between your code and the error.
FRAMEWORK_PACKAGES = (
    "torch",
    "torchvision",
    "torchaudio",
    "transformers",
    "peft",
    "trl",
    "datasets",
    "accelerate",
    "deepspeed",
    "numpy",
    "pandas",
    "lightning",
    "pytorch_lightning",
    "tokenizers",
    "safetensors",
    "huggingface_hub",
    "typer",
    "click",
    "jax",
    "flax",
    "triton",
    "bitsandbytes",
    "vllm",
    "sklearn",
    "scipy",
    "tensorflow",
    "keras",
    "expkit",
)
_SITE = re.compile(r"[/\\](site|dist)-packages[/\\]")
_PKGS = "|".join(FRAMEWORK_PACKAGES)
# outside site-packages (editable installs, source checkouts): src/<pkg>/, <pkg>/<pkg>/, or torch's own
# subpackages. A bare "datasets/" or "data/" folder in a user's project stays the user's.
_FRAMEWORK_DIR = re.compile(
    r"[/\\]src[/\\](" + _PKGS + r")[/\\]|[/\\](" + _PKGS + r")[/\\]\2[/\\]|"
    r"(^|[/\\])torch[/\\](nn|autograd|utils|optim|distributed|cuda|amp|fx|_dynamo|"
    r"_inductor|_tensor\.py|serialization\.py|functional\.py)"
)
# launchers' console scripts (bin/torchrun, bin/accelerate ...): their frames are machinery, not your code
_LAUNCHER = re.compile(
    r"[/\\]bin[/\\](torchrun|accelerate|deepspeed|lightning|lm_eval|lm-eval|inspect|"
    r"transformers-cli|transformers|python\d*(\.\d+)?-m)$"
)
_STDLIB = re.compile(r"([/\\]lib[/\\]python\d+(\.\d+)?[/\\])|(^[A-Za-z]:\\.*\\Lib\\)|(^<frozen )")

_RANK_PREFIX = re.compile(r"^\[(?:rank|default)(\d+)\]:\s?")
_FILE_LINE = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+?))?\s*$')
_TB_START = re.compile(r"(Original )?Traceback \(most recent call last\):\s*$")
_CAUSE = "The above exception was the direct cause of the following exception:"
_CONTEXT = "During handling of the above exception, another exception occurred:"
_CARET = re.compile(r"^\s*[\^~\s]+$")
_REPEATED = re.compile(r"^\s*\[Previous line repeated \d+ more times?\]\s*$")
# `pkg.mod.SomeError: message` or a bare `KeyboardInterrupt`; code lines do not look like this.
_EXC_WITH_MSG = re.compile(r"^(?P<type>(?:[A-Za-z_]\w*\.)+[A-Za-z_]\w*|[A-Z]\w*):(?:\s(?P<msg>.*))?$")
_EXC_BARE = re.compile(r"^(?P<type>(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Iteration|Warning))$")
_ROOT_CAUSE_RANK = re.compile(r"^\s*rank\s*:\s*(\d+)")


@dataclass(frozen=True)
class Frame:
    """One ``File "...", line N, in f`` entry; ``kind`` says whose code it is."""

    file: str
    line: int
    function: str | None
    code: str | None
    kind: FrameKind


@dataclass(frozen=True)
class ExceptionRecord:
    """One exception with its frames (outermost first, as printed).

    ``link`` says how it relates to the exception printed before it: ``cause`` (raise ... from),
    ``context`` (raised while handling), ``worker`` (a DataLoader worker's original traceback
    embedded in the message of the next one), None for the first.
    """

    type: str
    message: str
    frames: tuple[Frame, ...]
    link: Link | None = None

    @property
    def short_type(self) -> str:
        return self.type.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Traceback:
    """A parsed traceback.

    Attributes:
        exceptions: in printed order; the last one is the exception that ended the program.
        chosen_frame: the place to look, the last frame in your own files (None if no such frame).
        chosen_index: index into ``exceptions`` of the exception the chosen frame belongs to.
        rank: the torchrun rank the text was taken from (None for single-process output).
        failed_ranks: every rank seen with a traceback.
        identical_ranks: ranks whose traceback matched the chosen rank's (de-duplicated).
        warnings: what the parser had to guess (cut paste, mangled lines ...).
    """

    exceptions: tuple[ExceptionRecord, ...]
    chosen_frame: Frame | None
    chosen_index: int | None
    rank: int | None = None
    failed_ranks: tuple[int, ...] = ()
    identical_ranks: tuple[int, ...] = ()
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def final(self) -> ExceptionRecord | None:
        """The exception that escaped (last printed), or None when no exception line was found."""
        return self.exceptions[-1] if self.exceptions else None

    @property
    def frames(self) -> tuple[Frame, ...]:
        """Every frame of every exception, in printed order."""
        return tuple(f for e in self.exceptions for f in e.frames)


def classify_frame(path: str) -> FrameKind:
    """``framework`` for installed packages (site-packages, torch, transformers ...), ``stdlib`` for the
    standard library, ``yours`` for everything else (your files, ``<stdin>``, notebooks).

    Example:
        >>> classify_frame("/venv/lib/python3.11/site-packages/torch/nn/modules/module.py")
        'framework'
        >>> classify_frame("/usr/lib/python3.11/multiprocessing/pool.py")
        'stdlib'
        >>> classify_frame("/home/me/train.py")
        'yours'
    """
    if _SITE.search(path) or _FRAMEWORK_DIR.search(path) or _LAUNCHER.search(path):
        return "framework"
    if _STDLIB.search(path):
        return "stdlib"
    return "yours"


def _split_ranks(lines: list[str]) -> tuple[dict[int | None, list[str]], int | None]:
    """Group lines by ``[rankN]:`` prefix (None: unprefixed); also the root-cause rank torchrun names."""
    groups: dict[int | None, list[str]] = {}
    root_rank = None
    in_root = False
    for raw in lines:
        m = _RANK_PREFIX.match(raw)
        if m:
            groups.setdefault(int(m.group(1)), []).append(raw[m.end() :])
            continue
        groups.setdefault(None, []).append(raw)
        if "Root Cause (first observed failure)" in raw:
            in_root = True
        elif in_root:
            r = _ROOT_CAUSE_RANK.match(raw)
            if r:
                root_rank = int(r.group(1))
                in_root = False
    return groups, root_rank


def _exception_line(text: str) -> tuple[str, str] | None:
    s = text.strip()
    m = _EXC_WITH_MSG.match(s)
    if m:
        return m.group("type"), (m.group("msg") or "").strip()
    m = _EXC_BARE.match(s)
    if m:
        return m.group("type"), ""
    return None


class _Parser:
    """A line-driven state machine: frames until an exception line, then its message until a blank
    line, a separator or a new traceback."""

    def __init__(self) -> None:
        self.records: list[ExceptionRecord] = []
        self.warnings: list[str] = []
        self.frames: list[Frame] = []
        self.link: Link | None = None
        self.in_tb = False
        self.exc: tuple[str, list[str]] | None = None
        self.expect_code = False
        self.pending_outer: tuple[tuple[str, list[str]], list[Frame]] | None = None

    def _close_exception(self) -> None:
        if self.exc is not None:
            etype, msg_lines = self.exc
            self.records.append(ExceptionRecord(etype, "\n".join(msg_lines).strip(), tuple(self.frames), self.link))
            self.frames, self.exc, self.link = [], None, None
        elif self.frames:
            self.warnings.append("the traceback is cut before its exception line; frames kept")
            self.records.append(ExceptionRecord("<unknown>", "", tuple(self.frames), self.link))
            self.frames, self.link = [], None
        if self.pending_outer is not None:
            (etype, msg_lines), frames = self.pending_outer
            self.records.append(ExceptionRecord(etype, "\n".join(msg_lines).strip(), tuple(frames), "worker"))
            self.pending_outer = None
        self.in_tb = False
        self.expect_code = False

    def feed(self, raw: str) -> None:
        line = raw.rstrip("\r\n")
        stripped = line.strip()
        start = _TB_START.search(stripped)
        if start:
            worker = bool(start.group(1))
            if worker and self.exc is not None:
                # DataLoader: "Caught X in DataLoader worker process 0.\nOriginal Traceback ..."
                # the embedded traceback is the root; the outer exception follows it.
                self.pending_outer = (self.exc, self.frames)
                self.exc, self.frames = None, []
            else:
                self._close_exception()
            self.in_tb = True
            return
        if stripped in (_CAUSE, _CONTEXT):
            self._close_exception()
            self.link = "cause" if stripped == _CAUSE else "context"
            return
        fm = _FILE_LINE.search(stripped)
        if fm:
            if self.exc is not None:  # a new frame after an exception line: the paste lost a header
                self._close_exception()
            self.in_tb = True
            path = fm.group("file")
            self.frames.append(Frame(path, int(fm.group("line")), fm.group("func"), None, classify_frame(path)))
            self.expect_code = True
            return
        if self.exc is not None:
            if stripped:
                self.exc[1].append(stripped)
            else:  # a blank line ends the message
                self._close_exception()
            return
        if not self.in_tb:
            return
        if not stripped or _CARET.match(line) or _REPEATED.match(line):
            return
        exc = _exception_line(stripped)
        if self.expect_code and exc is None:
            self.frames[-1] = replace(self.frames[-1], code=stripped)
            self.expect_code = False
            return
        if exc is not None:
            self.exc = (exc[0], [exc[1]] if exc[1] else [])
            self.expect_code = False
            return
        self.expect_code = False  # an unexpected line (mangled paste): skip it

    def finish(self) -> list[ExceptionRecord]:
        if self.exc is not None or self.frames or self.pending_outer is not None:
            self._close_exception()
        return self.records


_GROUP_SEP = re.compile(r"^\s*\+[-+]*(\s*(\d+|\.\.\.)\s*-*)?-*\s*$")  # +-+---- 1 ----, +------
_GROUP_BAR = re.compile(r"^\s*(\| ?|\+ )")


def _ungroup(lines: list[str]) -> list[str]:
    """ExceptionGroup output (Python 3.11+) draws ``|`` and ``+--`` around each sub-traceback: drop the
    drawing, keep the tracebacks (parsed as a chain, the group first)."""
    if not any("Exception Group Traceback" in line for line in lines):
        return lines
    out = []
    for line in lines:
        if _GROUP_SEP.match(line):
            out.append("")
            continue
        out.append(_GROUP_BAR.sub("", line, count=1))
    return out


def _parse_lines(lines: list[str]) -> tuple[list[ExceptionRecord], list[str]]:
    p = _Parser()
    for line in _ungroup(lines):
        p.feed(line)
    return p.finish(), p.warnings


def _choose(records: list[ExceptionRecord]) -> tuple[Frame | None, int | None]:
    """The last frame of yours in the root of a worker chain, else in the final exception, else in the
    exceptions before it (last to first)."""
    if not records:
        return None, None
    order = list(range(len(records) - 1, -1, -1))
    if records[-1].link == "worker" and len(records) >= 2:
        order.remove(len(records) - 2)
        order.insert(0, len(records) - 2)
    for i in order:
        yours = [f for f in records[i].frames if f.kind == "yours"]
        if yours:
            return yours[-1], i
    return None, len(records) - 1


_RANK_NOISE = re.compile(r"(cuda:\d+|GPU \d+|rank \d+|rank\d+|device \d+|pid \d+|0x[0-9a-f]+)")


def _signature(records: list[ExceptionRecord]) -> tuple[object, ...]:
    return tuple((r.type, _RANK_NOISE.sub("#", r.message), tuple((f.file, f.line) for f in r.frames)) for r in records)


def parse_traceback(text: str) -> Traceback:
    """Parse traceback text: plain, chained, DataLoader-worker and ``torchrun`` multi-rank output.

    Args:
        text: the text of a log or a paste; anything around the traceback is ignored.

    Returns:
        A Traceback. With ``[rankN]:`` prefixes, the rank torchrun names as root cause is chosen,
        else the first rank whose traceback appears; ranks with the same traceback (up to rank and
        device numbers) are listed in ``identical_ranks``. Never raises on odd input: what was
        guessed is in ``warnings``.

    Example:
        >>> tb = parse_traceback('Traceback (most recent call last):\\n  File "/me/t.py", line 3, in <module>\\n'
        ...                      '    1/0\\nZeroDivisionError: division by zero\\n')
        >>> tb.final.type, tb.chosen_frame.line
        ('ZeroDivisionError', 3)
    """
    lines = text.splitlines()
    groups, root_rank = _split_ranks(lines)
    parsed = {rank: _parse_lines(ls) for rank, ls in groups.items()}
    failed = [r for r, (recs, _) in parsed.items() if r is not None and recs]
    if failed:
        rank = root_rank if root_rank in failed else failed[0]
        records, warnings = parsed[rank]
        sig = _signature(records)
        identical = tuple(sorted(r for r in failed if r != rank and _signature(parsed[r][0]) == sig))
    else:
        rank, identical = None, ()
        records, warnings = parsed.get(None, ([], []))
    warnings = list(warnings)
    if not records:
        warnings.append(
            "no traceback found in the text (no 'Traceback (most recent call last):' or 'File \"...\", line N' lines)"
        )
    chosen, index = _choose(records)
    if records and chosen is None:
        warnings.append("no frame in your own files: every frame is framework or standard library")
    return Traceback(
        exceptions=tuple(records),
        chosen_frame=chosen,
        chosen_index=index,
        rank=rank,
        failed_ranks=tuple(sorted(failed)),
        identical_ranks=identical,
        warnings=tuple(warnings),
    )
