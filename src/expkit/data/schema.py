"""``expkit data validate``: check every record of a JSONL file against a built-in SFT schema (chat,
prompt-completion) or a JSON Schema file, and report every violation with its line number."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from expkit.data.jsonl import JsonlSummary, JsonlTally, iter_jsonl
from expkit.data.profile import PROGRESS_EVERY_MASK, _report_progress, json_type
from expkit.errors import InputError, UsageError

__all__ = ["BUILTIN_SCHEMAS", "ValidationReport", "Violation", "validate_jsonl", "validate_record"]

CHAT_ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True)
class Violation:
    """One problem: the line, where in the record (``messages[2].role``), and what is wrong."""

    line: int
    where: str
    message: str


@dataclass(frozen=True)
class ValidationReport:
    """Every violation (up to ``max_violations`` kept, ``violation_count`` counts all)."""

    path: str
    schema: str
    read: JsonlSummary
    violations: tuple[Violation, ...]
    violation_count: int

    @property
    def ok(self) -> bool:
        return self.violation_count == 0


Checker = Callable[[Any], Iterator[tuple[str, str]]]


def _check_messages(msgs: Any, where: str) -> Iterator[tuple[str, str]]:
    if not isinstance(msgs, list):
        yield where, f"must be an array of messages, got {json_type(msgs)}"
        return
    if not msgs:
        yield where, "is empty"
        return
    for i, m in enumerate(msgs):
        w = f"{where}[{i}]"
        if not isinstance(m, dict):
            yield w, f"must be an object with role and content, got {json_type(m)}"
            continue
        role = m.get("role")
        if role not in CHAT_ROLES:
            yield f"{w}.role", f"must be one of {', '.join(CHAT_ROLES)}, got {role!r}"
        if role == "system" and i != 0:
            yield f"{w}.role", "a system message must come first"
        content = m.get("content")
        if not isinstance(content, (str, list)) and not (role == "assistant" and "tool_calls" in m):
            yield f"{w}.content", f"must be a string (or content parts), got {json_type(content)}"


def _check_chat(rec: Any) -> Iterator[tuple[str, str]]:
    if "messages" not in rec:
        yield "messages", "missing (chat records need a 'messages' array)"
        return
    yield from _check_messages(rec["messages"], "messages")
    msgs = rec["messages"]
    if isinstance(msgs, list) and msgs and not any(isinstance(m, dict) and m.get("role") == "assistant" for m in msgs):
        yield "messages", "has no assistant message: nothing to train on"


def _check_prompt_completion(rec: Any) -> Iterator[tuple[str, str]]:
    for key in ("prompt", "completion"):
        if key not in rec:
            yield key, "missing"
        elif isinstance(rec[key], list):  # TRL's conversational prompt-completion
            yield from _check_messages(rec[key], key)
        elif not isinstance(rec[key], str):
            yield key, f"must be a string or a list of messages, got {json_type(rec[key])}"
        elif key == "completion" and not rec[key]:
            yield key, "is empty: nothing to train on"


BUILTIN_SCHEMAS: dict[str, Checker] = {"chat": _check_chat, "prompt-completion": _check_prompt_completion}

_TYPE_OK = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _matches_type(value: Any, t: str) -> bool:
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _TYPE_OK.get(t, object))


def _check_json_schema(schema: dict[str, Any], value: Any, where: str) -> Iterator[tuple[str, str]]:
    """The JSON Schema subset that describes JSONL records: type, enum, required, properties,
    additionalProperties (boolean), items, minLength, maxLength, minItems, maxItems, minimum, maximum."""
    t = schema.get("type")
    if t is not None:
        types = t if isinstance(t, list) else [t]
        if not any(_matches_type(value, x) for x in types):
            yield where, f"must be {' or '.join(types)}, got {json_type(value)}"
            return
    if "enum" in schema and value not in schema["enum"]:
        yield where, f"must be one of {schema['enum']}, got {value!r}"
    if isinstance(value, dict):
        for key in schema.get("required", ()):
            if key not in value:
                yield f"{where}.{key}".lstrip("."), "missing (required)"
        props = schema.get("properties", {})
        for key, sub in props.items():
            if key in value:
                yield from _check_json_schema(sub, value[key], f"{where}.{key}".lstrip("."))
        if schema.get("additionalProperties") is False:
            for key in value:
                if key not in props:
                    yield f"{where}.{key}".lstrip("."), "is not allowed (additionalProperties: false)"
    if isinstance(value, list):
        if "items" in schema:
            for i, item in enumerate(value):
                yield from _check_json_schema(schema["items"], item, f"{where}[{i}]")
        if len(value) < schema.get("minItems", 0):
            yield where, f"has {len(value)} items, fewer than minItems {schema['minItems']}"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            yield where, f"has {len(value)} items, more than maxItems {schema['maxItems']}"
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            yield where, f"has length {len(value)}, shorter than minLength {schema['minLength']}"
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            yield where, f"has length {len(value)}, longer than maxLength {schema['maxLength']}"
    if _matches_type(value, "number"):
        if "minimum" in schema and value < schema["minimum"]:
            yield where, f"is {value}, below minimum {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            yield where, f"is {value}, above maximum {schema['maximum']}"


def _load_schema_file(path: Path) -> Checker:
    if not path.is_file():
        raise UsageError(f"--schema {str(path)!r} is neither {' nor '.join(BUILTIN_SCHEMAS)} nor a JSON Schema file")
    try:
        schema = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise InputError(f"the schema is not valid JSON: {exc.msg}", path=path, line=exc.lineno, column=exc.colno) from exc
    if not isinstance(schema, dict):
        raise InputError("a JSON Schema must be an object", path=path)
    return lambda rec: _check_json_schema(schema, rec, "")


def validate_record(record: Any, schema: str = "chat") -> list[tuple[str, str]]:
    """The violations of one record against a built-in schema, as ``(where, message)`` pairs."""
    if not isinstance(record, dict):
        return [("", f"a record must be a JSON object, got {json_type(record)}")]
    return list(BUILTIN_SCHEMAS[schema](record))


def validate_jsonl(
    path: str | Path,
    *,
    schema: str | Path = "chat",
    max_violations: int = 10_000,
    on_progress: Callable[[int, int], None] | None = None,
) -> ValidationReport:
    """Check every line of a JSONL file; invalid JSON lines are violations too, not a stop.

    Args:
        path: ``.jsonl``, ``.jsonl.gz`` or ``-``.
        schema: ``chat`` (a ``messages`` array of ``{role, content}``, roles system/user/assistant/tool,
            system first, at least one assistant turn), ``prompt-completion`` (strings or message lists;
            the TRL formats), or a path to a JSON Schema file (the subset in ``_check_json_schema``).
        max_violations: how many violations to keep; all are counted.
        on_progress: called as ``(bytes_read, total_bytes)`` every 65,536 lines of a plain file.

    Returns:
        A ValidationReport; ``ok`` is False when there is any violation.

    Raises:
        UsageError: an unknown schema name. InputError: a missing file, a bad schema file.
    """
    checker = BUILTIN_SCHEMAS.get(str(schema)) if isinstance(schema, str) else None
    if checker is None:
        checker = _load_schema_file(Path(schema))
    tally = JsonlTally(max_errors=max_violations)
    kept: list[Violation] = []
    count = 0
    for rec in iter_jsonl(path, on_error="collect", tally=tally):
        if on_progress is not None and not tally.lines & PROGRESS_EVERY_MASK:
            _report_progress(tally, on_progress)
        # during the loop, tally.lines is the line of the record just yielded
        problems = list(checker(rec)) if isinstance(rec, dict) else \
            [("", f"a record must be a JSON object, got {json_type(rec)}")]
        for where, msg in problems:
            count += 1
            if len(kept) < max_violations:
                kept.append(Violation(line=tally.lines, where=where, message=msg))
    bad_json = [Violation(line=e.line or 0, where=f"column {e.column}",
                          message=e.message.removeprefix(f"{e.path}:{e.line}:{e.column}: ")) for e in tally.errors]
    violations = sorted(kept + bad_json, key=lambda v: v.line)[:max_violations]
    return ValidationReport(path=tally.path, schema=str(schema), read=tally.summary(), violations=tuple(violations),
                            violation_count=count + tally.skipped)
