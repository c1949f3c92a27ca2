"""The ``expkit why`` report as plain text: the chain, frames with framework runs collapsed, the place
to look, the explanation. Shared by the CLI and the live excepthook (``install``)."""

from __future__ import annotations

from dataclasses import dataclass

from expkit.diagnose.explanations import Explanation
from expkit.diagnose.logtext import sanitize_for_terminal
from expkit.diagnose.tracebacks import Frame, Traceback

__all__ = ["FrameGroup", "collapse_frames", "format_report"]

_LINK_TEXT = {
    "cause": "which directly caused",
    "context": "and while handling it",
    "worker": "which the main process re-raised as",
}


@dataclass(frozen=True)
class FrameGroup:
    """A frame of yours shown alone, or a run of framework/stdlib frames shown as one line."""

    frames: tuple[Frame, ...]
    collapsed: bool


def collapse_frames(frames: tuple[Frame, ...]) -> tuple[FrameGroup, ...]:
    """Group consecutive non-yours frames into one collapsed group; each frame of yours stays alone."""
    groups: list[FrameGroup] = []
    run: list[Frame] = []
    for f in frames:
        if f.kind == "yours":
            if run:
                groups.append(FrameGroup(tuple(run), True))
                run = []
            groups.append(FrameGroup((f,), False))
        else:
            run.append(f)
    if run:
        groups.append(FrameGroup(tuple(run), True))
    return tuple(groups)


def _short(path: str) -> str:
    norm = path.replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/"):
        if marker in norm:
            return norm.split(marker, 1)[1]
    return path


def _describe_run(frames: tuple[Frame, ...]) -> str:
    kinds = sorted({f.kind for f in frames})
    files: list[str] = []
    for f in frames:
        s = _short(f.file)
        if s not in files:
            files.append(s)
    shown = ", ".join(files[:3]) + (f", +{len(files) - 3} more" if len(files) > 3 else "")
    n = len(frames)
    return f"... {n} {'/'.join(kinds)} frame{'s' if n != 1 else ''} ({shown})"


def format_report(tb: Traceback, explanation: Explanation) -> str:
    """The report text: one block per exception (frames collapsed, ``>>`` on the place to look), then
    the explanation and what to try. Safe to print: text taken from the log has its terminal escape
    sequences and control characters neutralized (``sanitize_for_terminal``)."""
    out: list[str] = []
    if tb.rank is not None:
        same = f"; ranks {', '.join(map(str, tb.identical_ranks))} failed the same way" if tb.identical_ranks else ""
        out.append(f"rank {tb.rank} (failed ranks: {', '.join(map(str, tb.failed_ranks))}{same})")
    for i, rec in enumerate(tb.exceptions):
        if rec.link and i > 0:
            out.append(f"  {_LINK_TEXT[rec.link]}")
        if rec.type == "<unknown>":
            out.append("(no exception line: the text is cut)")
        else:
            first = next((ln for ln in rec.message.splitlines() if any(c.isalnum() for c in ln)), "")
            out.append(f"{rec.type}: {first}".rstrip(": "))
        for group in collapse_frames(rec.frames):
            if group.collapsed:
                out.append(f"    {_describe_run(group.frames)}")
                continue
            f = group.frames[0]
            mark = ">>" if f is tb.chosen_frame else "  "
            out.append(f"  {mark} {f.file}:{f.line} in {f.function or '?'}")
            if f.code:
                out.append(f"         {f.code}")
    out.append("")
    if tb.chosen_frame is not None:
        f = tb.chosen_frame
        out.append(f"Look here: {f.file}:{f.line} in {f.function or '?'}" + (f"  ({f.code})" if f.code else ""))
    out.append(f"What happened: {explanation.title}")
    out.append(f"  {explanation.summary}")
    if explanation.module:
        out.append(f"  Module: {explanation.module}")
    if explanation.trainer:
        out.append(f"  Where in the Trainer: {explanation.trainer}")
    if explanation.fixes:
        out.append("Try:")
        out.extend(f"  - {fix}" for fix in explanation.fixes)
    for w in tb.warnings:
        out.append(f"note: {w}")
    return sanitize_for_terminal("\n".join(out))
