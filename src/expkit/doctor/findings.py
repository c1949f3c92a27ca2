"""What a doctor check reports: a frozen ``Finding`` (what, where in the user's code, the measured
evidence, the fix) and how the user's line is found on the live stack."""

from __future__ import annotations

import ast
import functools
import linecache
import re
import sys
import tokenize
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "Finding",
    "FindingKind",
    "RawStack",
    "argument_made_at",
    "assigned_at",
    "assigned_from",
    "init_attribute_line",
    "is_user_file",
    "keyword_line",
    "raw_stack",
    "source_tokens",
    "source_tree",
    "string_literals",
    "user_frame",
    "user_line_of",
]

RawStack = tuple[tuple[str, int], ...]  # (file, line) innermost first, not yet classified
RAW_DEPTH = 24  # frames kept per recorded site

FindingKind = Literal["bug", "performance"]


@dataclass(frozen=True)
class Finding:
    """One thing a check found in the watched steps.

    Attributes:
        kind: ``bug`` (the run trains wrong) or ``performance`` (a cost, not an error).
        check: the registered check's name (``missing_zero_grad``).
        message: what is wrong, in one sentence.
        file, line: the bug's own line, where the check traced the cause (where the module was built, ``no_grad``
            entered, the optimizer built without the parameter); without a traced cause, the user's frame where it
            was seen (the innermost frame outside torch, installed packages, the standard library and expkit), or
            None when no such frame was on the stack.
        evidence: the measured numbers, named with their unit (``grad_norm_growth``: 1.98).
        fix: what to change.
        step: the optimizer step (1-based) in which it was seen; 0 before the first step.
        seen_file, seen_line: where the symptom showed, when that differs from ``file:line``: the user's line that
            was running when the doctor measured it (the loss call, the ``optimizer.step()``); else None.
    """

    kind: FindingKind
    check: str
    message: str
    file: str | None
    line: int | None
    evidence: dict[str, Any] = field(default_factory=dict)
    fix: str = ""
    step: int = 0
    seen_file: str | None = None
    seen_line: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "check": self.check,
            "message": self.message,
            "file": self.file,
            "line": self.line,
            "evidence": dict(self.evidence),
            "fix": self.fix,
            "step": self.step,
            "seen_file": self.seen_file,
            "seen_line": self.seen_line,
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Finding:
        kind = obj.get("kind")
        return cls(
            kind="performance" if kind == "performance" else "bug",
            check=str(obj["check"]),
            message=str(obj["message"]),
            file=obj.get("file"),
            line=int(obj["line"]) if obj.get("line") is not None else None,
            evidence=dict(obj.get("evidence") or {}),
            fix=str(obj.get("fix", "")),
            step=int(obj.get("step", 0)),
            seen_file=obj.get("seen_file"),
            seen_line=int(obj["seen_line"]) if obj.get("seen_line") is not None else None,
        )


def user_frame(skip: int = 1) -> tuple[str | None, int | None]:
    """``(file, line)`` of the innermost frame on the current stack that is the user's own code.

    A frame is the user's when :func:`expkit.diagnose.tracebacks.classify_frame` calls its file
    ``yours`` (the rule ``expkit why`` uses on a printed traceback: not torch, not an installed package,
    not the standard library, not expkit).
    """
    from expkit.diagnose.tracebacks import classify_frame  # here, not at import: the bootstrap stays light

    frame = sys._getframe(skip)
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith("<frozen") and classify_frame(path) == "yours":
            return path, frame.f_lineno
        frame = frame.f_back  # type: ignore[assignment]
    return None, None


def raw_stack(skip: int = 1) -> RawStack:
    """The current stack as ``(file, line)`` pairs, innermost first, without classifying them (cheap enough to
    record at every module attribute set while the probe is armed; :func:`user_line_of` classifies later)."""
    frame = sys._getframe(skip)
    out: list[tuple[str, int]] = []
    while frame is not None and len(out) < RAW_DEPTH:
        out.append((frame.f_code.co_filename, frame.f_lineno))
        frame = frame.f_back  # type: ignore[assignment]
    return tuple(out)


def construction_stack(obj: object, skip: int = 1) -> RawStack:
    """The stack where ``obj`` is being built, from the frame that called its class: the ``__init__`` frames of
    ``obj`` itself (a user class's ``super().__init__()`` chain) are skipped, so a module of the user's own class
    is placed where it was made (``self.attn = Attention()``), not at its ``super().__init__()`` line."""
    frame = sys._getframe(skip)
    while frame is not None and frame.f_code.co_name == "__init__" and frame.f_locals.get("self") is obj:
        frame = frame.f_back  # type: ignore[assignment]
    out: list[tuple[str, int]] = []
    while frame is not None and len(out) < RAW_DEPTH:
        out.append((frame.f_code.co_filename, frame.f_lineno))
        frame = frame.f_back  # type: ignore[assignment]
    return tuple(out)


def user_line_of(stack: RawStack | None) -> tuple[str | None, int | None]:
    """The innermost of ``stack``'s frames that is the user's own code (the rule of :func:`user_frame`)."""
    from expkit.diagnose.tracebacks import classify_frame

    for path, line in stack or ():
        if not path.startswith("<frozen") and classify_frame(path) == "yours":
            return path, line
    return None, None


@functools.lru_cache(maxsize=32)
def source_tokens(file: str) -> tuple[tokenize.TokenInfo, ...]:
    """The Python tokens of a user's source file (empty when it cannot be read or tokenized): where a finding
    locates a name or a string that the run showed to be the cause."""
    try:
        with tokenize.open(file) as fh:
            return tuple(tokenize.generate_tokens(fh.readline))
    except (OSError, SyntaxError, tokenize.TokenError, UnicodeDecodeError):
        return ()


def string_literals(file: str | None) -> list[tuple[int, str]]:
    """``(line, value)`` of each string literal in ``file`` (not docstrings' words: a whole token's value)."""
    out: list[tuple[int, str]] = []
    for tok in source_tokens(file) if file else ():
        if tok.type == tokenize.STRING:
            try:
                value = ast.literal_eval(tok.string)
            except (ValueError, SyntaxError):
                continue
            if isinstance(value, str):
                out.append((tok.start[0], value))
    return out


@functools.lru_cache(maxsize=32)
def source_tree(file: str) -> ast.Module | None:
    """The parsed source of a user's file (None when it cannot be read or parsed)."""
    try:
        with tokenize.open(file) as fh:
            return ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None


def argument_made_at(file: str | None, line: int | None, keyword: str, position: int | None = None) -> int | None:
    """The line that made the value passed as ``keyword=`` (or, when no call there names it, as the positional
    argument ``position``) by the call at ``line`` of ``file``: a name's last assignment before the call in the
    same function (``attention_mask = torch.ones_like(ids)``), else the argument's own line in a call written over
    several lines; None when no such call is there."""
    if file is None or line is None:
        return None
    tree = source_tree(file)
    if tree is None:
        return None
    scopes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    scope: ast.AST = min(
        (n for n in scopes if n.lineno <= line <= (n.end_lineno or n.lineno)),
        key=lambda n: (n.end_lineno or n.lineno) - n.lineno,
        default=tree,
    )
    for call in ast.walk(scope):
        if not (isinstance(call, ast.Call) and call.lineno <= line <= (call.end_lineno or call.lineno)):
            continue
        value = next((k.value for k in call.keywords if k.arg == keyword), None)
        if value is None and position is not None and len(call.args) > position:
            value = call.args[position]
        if value is None:
            continue
        inner = [(n.lineno, n.end_lineno or n.lineno) for n in scopes if n is not scope and n.lineno > line]
        inner += [(n.lineno, n.end_lineno or n.lineno) for n in scopes if (n.end_lineno or n.lineno) < line]
        # the names the value is built from (``mask``, ``mask if ok else None``, ``~mask.bool()``), first first
        for name in (n.id for n in ast.walk(value) if isinstance(n, ast.Name)):
            made = [
                node.lineno
                for node in ast.walk(scope)
                if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign))
                and node.lineno < call.lineno
                and not any(a <= node.lineno <= b for a, b in inner)  # not another function's own names
                and any(
                    isinstance(t, ast.Name) and t.id == name
                    for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
                    for t in ast.walk(target)
                )
            ]
            if made:
                return max(made)
        return value.lineno
    return None


def keyword_line(file: str | None, names: tuple[str, ...], before: int | None = None) -> int | None:
    """The line of the last ``name=`` keyword (any of ``names``) in a call of ``file`` before line ``before``
    (anywhere when None): where a setting the run showed to be wrong was written (``warmup_steps=500`` inside a
    ``TrainingArguments(...)`` over several lines)."""
    tree = source_tree(file) if file else None
    if tree is None:
        return None
    lines = sorted(
        k.value.lineno
        for call in ast.walk(tree)
        if isinstance(call, ast.Call)
        for k in call.keywords
        if k.arg in names and (before is None or k.value.lineno <= before)
    )
    return lines[-1] if lines else None


def _words(node: ast.AST) -> list[str]:
    """The identifiers, attribute names and string constants in an expression, lower-cased."""
    out: list[str] = []
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.append(n.id.lower())
        elif isinstance(n, ast.Attribute):
            out.append(n.attr.lower())
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            out.append(n.value.lower())
    return out


def assigned_from(file: str | None, target: str, source: str) -> int | None:
    """The first line of ``file`` that sets something named like ``target`` from something named like ``source``
    (``tok.pad_token = tok.eos_token``, ``PAD = EOS``, ``pad_token_id=cfg.eos_token_id``): where a value the run
    measured to be the same as another (the pad id is the stop id) was made so."""
    tree = source_tree(file) if file else None
    if tree is None:
        return None
    lines: list[int] = []
    for node in ast.walk(tree):
        pairs: list[tuple[list[str], ast.expr]] = []
        if isinstance(node, ast.Assign):
            pairs = [(_words(t), node.value) for t in node.targets]
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            pairs = [(_words(node.target), node.value)]
        elif isinstance(node, ast.Call):
            pairs = [([k.arg.lower()], k.value) for k in node.keywords if k.arg]
        elif isinstance(node, ast.Dict):  # add_special_tokens({"pad_token": tok.eos_token})
            pairs = [(_words(k), v) for k, v in zip(node.keys, node.values, strict=True) if k is not None]
        for names, value in pairs:
            if any(target in n for n in names) and any(source in w for w in _words(value)):
                lines.append(value.lineno)
    return min(lines) if lines else None


def init_attribute_line(cls: type, name: str) -> tuple[str | None, int | None]:
    """The user's line in ``cls.__init__`` that sets ``self.<name>`` (the first line naming it with an ``=`` in
    its code): where a module a check measured was built, when it was built before the probe was armed."""
    import inspect

    try:
        lines, first = inspect.getsourcelines(cls.__init__)  # type: ignore[misc]
        file = inspect.getsourcefile(cls.__init__)  # type: ignore[misc]
    except (OSError, TypeError):
        return None, None
    for i, text in enumerate(lines):
        if re.search(rf"self\.{re.escape(name)}\b", text) and "=" in text.split("#")[0]:
            return user_line_of(((file, first + i),)) if file else (None, None)
    return None, None


def is_user_file(path: str) -> bool:
    """Whether ``path`` is one of the user's files (not torch, an installed package, the standard library or
    expkit): the rule of :func:`user_line_of`."""
    return user_line_of(((path, 0),))[0] is not None


def assigned_at(value: Any, frame: Any, *, outer: bool = False) -> tuple[str | None, int | None]:
    """The user line that assigned the local variable holding ``value`` (the object itself), from ``frame`` out
    through the user's frames (a mask handed down as an argument); else the innermost user frame's line (the value
    built in the call's own arguments). ``outer``: a frame that does not hold it sends the search on outwards (a
    value a function reads from the module's globals, or from an object, was assigned in an outer frame)."""
    first: tuple[str | None, int | None] = (None, None)
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith("<frozen") and is_user_file(path):
            if first[0] is None:
                first = (path, frame.f_lineno)
            names = [k for k, v in frame.f_locals.items() if v is value]
            if not names and outer:
                frame = frame.f_back
                continue
            if not names:  # built in the call's own arguments
                return path, frame.f_lineno
            found = _assignment(path, frame.f_code.co_firstlineno, frame.f_lineno, names)
            if found is not None:  # ambiguous (0): the line of the call in this frame
                return path, found or frame.f_lineno
        frame = frame.f_back
    return first


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _assignment(path: str, start: int, call: int, names: list[str]) -> int | None:
    """The line above ``call`` (in the function that starts at ``start``) that assigned one of ``names`` and
    surely ran: the nearest one in the call's own block, else the only one in a nested (conditional) block; 0
    when it is ambiguous, None when there is none (a parameter)."""
    pattern = re.compile(rf"^\s*(?:{'|'.join(map(re.escape, names))})\s*(?::[^=]*)?=[^=]")
    level = _indent(linecache.getline(path, call))
    nested: list[int] = []
    for line in range(call - 1, start, -1):
        text = linecache.getline(path, line)
        if pattern.match(text):
            if _indent(text) <= level:
                return line if not nested else 0
            nested.append(line)
    return (nested[0] if len(nested) == 1 else 0) if nested else None
