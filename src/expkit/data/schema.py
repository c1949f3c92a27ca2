"""``expkit data validate``: check every record of a JSONL file against a built-in SFT schema (chat,
prompt-completion) or a JSON Schema file (through the ``jsonschema`` library), and report every
violation with its line number."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from expkit.data.jsonl import JsonlSummary, JsonlTally, iter_jsonl
from expkit.data.nesting import json_nesting_depth, too_deep
from expkit.data.patterns import pattern_search, re2_patterns
from expkit.data.profile import PROGRESS_EVERY_MASK, _report_progress, json_type
from expkit.errors import CheckFailed, InputError, UsageError

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

    def raise_if_failed(self) -> None:
        """CheckFailed naming the file, the count and the schema when there is any violation."""
        if not self.ok:
            raise CheckFailed(f"{self.path}: {self.violation_count} violation(s) of schema {self.schema}")


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


def _where(path: Any) -> str:
    """``messages[2].role`` from jsonschema's deque path ``['messages', 2, 'role']``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


_MAX_MESSAGE_CHARS = 240
# A schema nested deeper than this (JSON levels) is refused before jsonschema recurses through it: 60 nested
# properties (121 levels) check in ~300 frames, 100 nested allOf (201 levels) exhaust Python's 1000.
MAX_SCHEMA_DEPTH = 128


def _schema_retriever(base_dir: Path) -> Callable[[str], Any]:
    """$ref to another local schema file (relative to the schema's directory, or file://); a remote
    $ref is not fetched (no network access during validation)."""
    from referencing import Resource
    from referencing.exceptions import NoSuchResource
    from referencing.jsonschema import DRAFT202012

    def retrieve(uri: str) -> Any:
        if uri.startswith(("http://", "https://")):
            raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # an attrs class: ref is its field
        target = Path(uri.removeprefix("file://"))
        target = target if target.is_absolute() else base_dir / target
        try:
            contents = orjson.loads(target.read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise NoSuchResource(ref=uri) from exc  # type: ignore[call-arg]  # as above
        return Resource.from_contents(contents, default_specification=DRAFT202012)

    return retrieve


def _extra_properties(instance: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """The keys ``additionalProperties`` refused: neither in ``properties`` nor matched by ``patternProperties``."""
    props, patterns = schema.get("properties", {}), schema.get("patternProperties", {})
    return [k for k in instance if k not in props and not any(pattern_search(p, k) for p in patterns)]


def _read_schema_json(path: Path) -> tuple[Any, int]:
    """The schema file's JSON (an object or a boolean) and its nesting depth; one past MAX_SCHEMA_DEPTH is
    refused before the validator recurses through it."""
    if not path.is_file():
        raise UsageError(f"schema {str(path)!r} is neither {' nor '.join(BUILTIN_SCHEMAS)} nor a JSON Schema file")
    raw = path.read_bytes()
    depth = json_nesting_depth(raw)
    if depth > MAX_SCHEMA_DEPTH:
        raise too_deep(path, depth, MAX_SCHEMA_DEPTH, what="the schema is")
    try:
        schema = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InputError(
            f"the schema is not valid JSON: {exc.msg}", path=path, line=exc.lineno, column=exc.colno
        ) from exc
    if not isinstance(schema, (dict, bool)):
        raise InputError("a JSON Schema must be an object (or true/false)", path=path)
    return schema, depth


def _load_schema_file(path: Path) -> Checker:
    """A checker backed by the ``jsonschema`` library: the draft the schema's ``$schema`` names, else
    Draft 2020-12, every keyword (``pattern``, ``anyOf``, ``$ref``, ``if``/``then`` ...), ``format`` checked.
    Patterns are matched by RE2 where it accepts them (``expkit.data.patterns`` says what differs)."""
    schema, depth = _read_schema_json(path)
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for
    from referencing import Registry
    from referencing.exceptions import Unresolvable

    try:
        cls = validator_for(schema, default=Draft202012Validator)
        cls.check_schema(schema)
    except RecursionError:  # jsonschema recurses per level: ~50 nested allOf exhaust Python's 1000 frames
        raise InputError(
            f"the schema is nested {depth:,} levels deep: too deep for the validator (Python's recursion limit)",
            path=path,
            hint="flatten the nesting (e.g. merge nested allOf), or split the schema into $ref'd definitions",
        ) from None
    except SchemaError as exc:
        at = _where(exc.path) or "the top level"
        raise InputError(
            f"not a valid JSON Schema: {exc.message[:_MAX_MESSAGE_CHARS]} (at {at})",
            path=path,
            hint="check the schema against the JSON Schema specification (draft 2020-12)",
        ) from None
    registry: Registry = Registry(retrieve=_schema_retriever(path.parent))  # type: ignore[call-arg]  # attrs field
    validator = cls(schema, registry=registry, format_checker=cls.FORMAT_CHECKER)

    def check(rec: Any) -> Iterator[tuple[str, str]]:
        with re2_patterns():  # patterns in linear time: ^(a+)+$ cannot backtrack without end
            errors = sorted(_errors(rec), key=lambda wm: wm[0])  # by place within the record
        yield from errors

    def _errors(rec: Any) -> Iterator[tuple[str, str]]:
        try:
            for err in validator.iter_errors(rec):
                where = _where(err.path)
                if err.validator == "required" and isinstance(err.instance, dict):
                    # one error per missing property: name it in the place, as the built-in schemas do
                    missing = next(
                        (k for k in err.validator_value if k not in err.instance and repr(k) in err.message), None
                    )
                    if missing is not None:
                        where = f"{where}.{missing}" if where else str(missing)
                elif (
                    err.validator == "additionalProperties"
                    and isinstance(err.instance, dict)
                    and isinstance(err.schema, dict)
                ):
                    extra = _extra_properties(err.instance, err.schema)
                    if len(extra) == 1:
                        where = f"{where}.{extra[0]}" if where else extra[0]
                msg = err.message
                if len(msg) > _MAX_MESSAGE_CHARS:
                    msg = msg[:_MAX_MESSAGE_CHARS] + "..."
                yield where, f"{msg} ({err.validator})"
        except Unresolvable as exc:
            raise InputError(
                f"the schema's $ref {exc.ref!r} cannot be resolved (remote schemas are not fetched; a "
                "relative $ref names a file beside the schema)",
                path=path,
            ) from None
        except RecursionError:  # {"$ref": "#"}: a schema that refers to itself with nothing else to check
            raise InputError(
                'the schema refers to itself without end (a $ref cycle such as {"$ref": "#"})',
                path=path,
                hint="give each $ref a subschema that checks something before it refers back",
            ) from None

    return check


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
            the TRL formats), or a path to a JSON Schema file, checked by the ``jsonschema`` library
            (Draft 2020-12 unless its ``$schema`` says otherwise; every keyword; ``format`` checked;
            a relative ``$ref`` reads a file beside the schema).
        max_violations: how many violations to keep; all are counted.
        on_progress: called as ``(bytes_read, total_bytes)`` every 65,536 lines of a plain file.

    Returns:
        A ValidationReport; ``ok`` is False when there is any violation.

    Raises:
        UsageError: an unknown schema name. InputError: a missing file, a schema file that is not JSON
            or not a valid JSON Schema (exit 2, naming it), a $ref that cannot be resolved.
    """
    checker = BUILTIN_SCHEMAS.get(str(schema)) if isinstance(schema, str) else None
    any_value = checker is None  # a JSON Schema decides itself what a record may be (an object or not)
    if checker is None:
        checker = _load_schema_file(Path(schema))
    tally = JsonlTally(max_errors=max_violations)
    kept: list[Violation] = []
    count = 0
    for rec in iter_jsonl(path, on_error="collect", tally=tally, exact_ints=any_value):
        if on_progress is not None and not tally.lines & PROGRESS_EVERY_MASK:
            _report_progress(tally, on_progress)
        # during the loop, tally.lines is the line of the record just yielded
        problems = (
            list(checker(rec))
            if any_value or isinstance(rec, dict)
            else [("", f"a record must be a JSON object, got {json_type(rec)}")]
        )
        for where, msg in problems:
            count += 1
            if len(kept) < max_violations:
                kept.append(Violation(line=tally.lines, where=where, message=msg))
    bad_json = [
        Violation(
            line=e.line or 0,
            where=f"column {e.column}",
            message=e.message.removeprefix(f"{e.path}:{e.line}:{e.column}: "),
        )
        for e in tally.errors
    ]
    violations = sorted(kept + bad_json, key=lambda v: v.line)[:max_violations]
    return ValidationReport(
        path=tally.path,
        schema=str(schema),
        read=tally.summary(),
        violations=tuple(violations),
        violation_count=count + tally.skipped,
    )
