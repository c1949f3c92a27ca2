"""Chat data for SFT: read and validate a user's JSONL (``messages`` or prompt-completion), and generate
synthetic conversations whose answers can be checked (arithmetic, string reversal, unit conversion).
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from expkit.data.sources import check_replaceable
from expkit.errors import InputError, UsageError

__all__ = [
    "ROLES",
    "TASKS",
    "ChatDataWritten",
    "ChatExample",
    "ChatFile",
    "answer_of",
    "generate_chat_examples",
    "iter_chat_examples",
    "prompt_of",
    "read_chat_file",
    "write_chat_jsonl",
    "write_synthetic_chat",
]

ROLES = ("system", "user", "assistant", "tool", "ipython")  # ipython: Llama 3.x's name for a tool result
TASKS = ("add", "reverse", "km_to_m")
OnError = Literal["raise", "skip"]
# One short system prompt, as many real SFT sets carry (it is masked out of the loss, like the user turn).
SYSTEM_PROMPT = "You are a helpful assistant. Answer with the result only."


@dataclass(frozen=True)
class ChatExample:
    """One training example: either ``messages`` (conversational) or ``prompt`` + ``completion`` text.

    ``line`` is the 1-based line of the JSONL file it came from (0 when built in memory). ``tools``: the
    conversation's top-level tool schemas, passed to the chat template as ``tools=`` (None: none). Messages keep
    every key they were given (``tool_calls`` with null content, ``reasoning_content``, ``tool_call_id`` ...).
    """

    messages: tuple[dict[str, Any], ...] = ()
    prompt: str | None = None
    completion: str | None = None
    line: int = 0
    tools: tuple[dict[str, Any], ...] | None = None

    @property
    def tool_list(self) -> list[dict[str, Any]] | None:
        """``tools`` as the list ``apply_chat_template(tools=...)`` takes."""
        return list(self.tools) if self.tools is not None else None

    @property
    def conversational(self) -> bool:
        return bool(self.messages)


@dataclass(frozen=True)
class ChatFile:
    """The examples of one file, and the lines skipped with ``on_error="skip"`` (line -> reason)."""

    path: Path
    examples: tuple[ChatExample, ...]
    skipped: dict[int, str] = field(default_factory=dict)


def _check_encodable(text: str, what: str, *, path: Path, line: int) -> None:
    """JSON can spell a lone UTF-16 surrogate (``"\\ud800"``); no tokenizer can encode it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"{what} has an unpaired surrogate {text[exc.start]!r} at character {exc.start}: not valid Unicode text",
            path=path,
            line=line,
            hint="fix the writer that escaped it",
        ) from None


def _check_tool_calls(calls: object, i: int, *, path: Path, line: int) -> None:
    """OpenAI/HF-style ``tool_calls``: a non-empty list of ``{"function": {"name": str, "arguments": dict | str}}``."""
    if not isinstance(calls, list) or not calls:
        raise InputError(f"message {i} (assistant): 'tool_calls' must be a non-empty list", path=path, line=line)
    for k, call in enumerate(calls):
        fn = call.get("function") if isinstance(call, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            raise InputError(
                f"message {i} (assistant): tool call {k} needs a 'function' with a 'name'",
                path=path,
                line=line,
                hint='write {"type": "function", "function": {"name": ..., "arguments": {...}}}',
            )
        if not isinstance(fn.get("arguments", {}), dict | str):
            raise InputError(
                f"message {i} (assistant): tool call {k}'s 'arguments' must be an object or a JSON string",
                path=path,
                line=line,
            )
        _check_encodable(json.dumps(call, ensure_ascii=False), f"message {i} tool call {k}", path=path, line=line)


def _validate_message(msg: object, i: int, *, path: Path, line: int) -> dict[str, Any]:
    if not isinstance(msg, dict) or "role" not in msg:
        raise InputError(f"message {i} must be an object with 'role' and 'content'", path=path, line=line)
    role, content, calls = msg["role"], msg.get("content"), msg.get("tool_calls")
    if role not in ROLES:
        raise InputError(
            f"message {i} has unknown role {role!r}", path=path, line=line, hint=f"use one of {', '.join(ROLES)}"
        )
    if calls is not None:
        if role != "assistant":
            raise InputError(
                f"message {i} ({role}) has 'tool_calls': only assistant turns call tools", path=path, line=line
            )
        _check_tool_calls(calls, i, path=path, line=line)
    if calls and (content is None or content == ""):  # a tool-call turn: null or empty content is the usual form
        pass
    elif "content" not in msg:
        raise InputError(f"message {i} must be an object with 'role' and 'content'", path=path, line=line)
    elif not isinstance(content, str) or not content.strip():
        raise InputError(
            f"message {i} ({role}) has empty content",
            path=path,
            line=line,
            hint="drop the example or fill the turn (an assistant turn may have null content with 'tool_calls'); "
            "on_error='skip' skips and counts it",
        )
    else:
        _check_encodable(content, f"message {i} ({role})", path=path, line=line)
    reasoning = msg.get("reasoning_content")
    if reasoning is not None and (role != "assistant" or not isinstance(reasoning, str)):
        raise InputError(
            f"message {i} ({role}): 'reasoning_content' must be a string on an assistant turn", path=path, line=line
        )
    if isinstance(reasoning, str):
        _check_encodable(reasoning, f"message {i} reasoning_content", path=path, line=line)
    out = dict(msg)  # the other keys (tool_call_id, name, tool_plan ...) go to the template as they are
    if calls and not content:  # null or missing: "" renders in every template (Granite's `+ content` fails on null)
        out["content"] = ""
    return out


def _validate_messages(messages: object, *, path: Path, line: int) -> tuple[dict[str, Any], ...]:
    if not isinstance(messages, list) or not messages:
        raise InputError("'messages' must be a non-empty list of {role, content}", path=path, line=line)
    out = [_validate_message(msg, i, path=path, line=line) for i, msg in enumerate(messages)]
    if out[0]["role"] == "assistant":
        raise InputError(
            "conversation starts with an assistant turn: there is no prompt for it to answer",
            path=path,
            line=line,
            hint="start with a user (or system + user) turn",
        )
    if not any(m["role"] == "assistant" for m in out):
        raise InputError(
            "conversation has no assistant turn (nothing to train on)",
            path=path,
            line=line,
            hint="every example needs at least one assistant message",
        )
    return tuple(out)


def _validate_tools(tools: object, *, path: Path, line: int) -> tuple[dict[str, Any], ...] | None:
    """A top-level ``tools`` list (JSON schemas, as ``apply_chat_template(tools=...)`` takes them)."""
    if tools is None:
        return None
    if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
        raise InputError(
            "'tools' must be a list of tool schemas (objects)",
            path=path,
            line=line,
            hint='e.g. [{"type": "function", "function": {"name": "get_weather", "parameters": {...}}}]',
        )
    return tuple(tools)


def _parse_example(obj: object, *, path: Path, line: int) -> ChatExample:
    if not isinstance(obj, dict):
        raise InputError("each line must be a JSON object", path=path, line=line)
    tools = _validate_tools(obj.get("tools"), path=path, line=line)
    if "messages" in obj:
        return ChatExample(messages=_validate_messages(obj["messages"], path=path, line=line), line=line, tools=tools)
    if "prompt" in obj and "completion" in obj:
        prompt, completion = obj["prompt"], obj["completion"]
        if isinstance(prompt, list) and isinstance(completion, list):  # conversational prompt-completion
            msgs = _validate_messages(list(prompt) + list(completion), path=path, line=line)
            return ChatExample(messages=msgs, line=line, tools=tools)
        if not isinstance(prompt, str) or not isinstance(completion, str):
            raise InputError(
                "'prompt' and 'completion' must both be strings (or both message lists)", path=path, line=line
            )
        if not completion.strip():
            raise InputError("'completion' is empty", path=path, line=line)
        _check_encodable(prompt, "'prompt'", path=path, line=line)
        _check_encodable(completion, "'completion'", path=path, line=line)
        return ChatExample(prompt=prompt, completion=completion, line=line)
    keys = ", ".join(sorted(obj)) or "none"
    raise InputError(f"no 'messages' and no 'prompt'/'completion' fields (found: {keys})", path=path, line=line)


def iter_chat_examples(
    path: str | Path, *, on_error: OnError = "raise", skipped: dict[int, str] | None = None
) -> Iterator[ChatExample]:
    """Yield the examples of a JSONL file, validated.

    Args:
        path: a JSONL file, one example per line: ``{"messages": [{"role", "content"}, ...]}`` or
            ``{"prompt": ..., "completion": ...}``. Blank lines are ignored.
        on_error: ``"raise"`` (InputError with the line number) or ``"skip"`` (skip the line and record
            the reason in ``skipped``).
        skipped: filled with line -> reason when ``on_error="skip"``.

    Raises:
        InputError: a missing file, a line that is not UTF-8, bad JSON, a conversation without an assistant
            turn, an unknown role or an empty content, with the file and line.

    Example:
        >>> next(iter_chat_examples("data.jsonl")).messages[0]["role"]
        'user'
    """
    from expkit.data.jsonl import JsonlTally, iter_jsonl  # the one JSONL reader: file:line:column errors

    if on_error not in ("raise", "skip"):
        raise UsageError(f"on_error must be 'raise' or 'skip', not {on_error!r}")
    p = Path(path)
    if not p.is_file():
        raise InputError("data file not found", path=p, hint="give a JSONL file; `expkit sft data` writes one")
    tally = JsonlTally()
    seen_errors = 0
    # collect: lines that are not JSON (or not UTF-8) are kept in the tally, with their line, not raised
    for obj in iter_jsonl(p, on_error="raise" if on_error == "raise" else "collect", tally=tally):
        line = tally.lines
        if skipped is not None:
            for err in tally.errors[seen_errors:]:
                skipped[err.line or 0] = err.message
        seen_errors = len(tally.errors)
        try:
            yield _parse_example(obj, path=p, line=line)
        except InputError as exc:
            if on_error == "raise":
                raise
            if skipped is not None:
                skipped[line] = exc.message
    if skipped is not None:
        for err in tally.errors[seen_errors:]:
            skipped[err.line or 0] = err.message


def read_chat_file(path: str | Path, *, on_error: OnError = "raise", limit: int | None = None) -> ChatFile:
    """All (or the first ``limit``) examples of a JSONL file; see ``iter_chat_examples``.

    Raises:
        InputError: as ``iter_chat_examples``, or a file with no usable example.
    """
    skipped: dict[int, str] = {}
    examples = []
    for ex in iter_chat_examples(path, on_error=on_error, skipped=skipped):
        examples.append(ex)
        if limit is not None and len(examples) >= limit:
            break
    if not examples:
        raise InputError(
            "no usable example in the file",
            path=path,
            hint=f"{len(skipped)} lines skipped" if skipped else "the file is empty",
        )
    return ChatFile(path=Path(path), examples=tuple(examples), skipped=skipped)


# ---- synthetic, checkable tasks -------------------------------------------------------------------

_WORDS = (
    "cat",
    "dog",
    "sun",
    "map",
    "red",
    "cup",
    "hat",
    "pen",
    "box",
    "car",
    "bee",
    "owl",
    "ink",
    "jam",
    "log",
    "net",
    "pig",
    "rug",
    "toy",
    "van",
    "web",
    "zip",
    "art",
    "bus",
    "fig",
    "gem",
    "hen",
    "ice",
)


def _make_task(task: str, rng: random.Random) -> tuple[str, str]:
    """(question, answer) for one task instance."""
    if task == "add":
        a, b = rng.randint(0, 49), rng.randint(0, 49)
        return f"What is {a} + {b}?", str(a + b)
    if task == "reverse":
        w = rng.choice(_WORDS)
        return f"Reverse the word {w}.", w[::-1]
    if task == "km_to_m":
        k = rng.randint(1, 99)
        return f"How many meters are {k} km?", str(k * 1000)
    raise UsageError(f"unknown task {task!r}", hint=f"use one of {', '.join(TASKS)}")


def plain_task_text(task: str, rng: random.Random) -> str:
    """The same fact as a plain sentence (no chat format), for pre-training the demo model."""
    question, answer = _make_task(task, rng)
    return f"{question} {answer}."


# The examples are built in memory (~1 KB each): a million is ~1 GB, far more than SFT on these tasks needs.
MAX_SYNTHETIC_EXAMPLES = 1_000_000


def generate_chat_examples(
    *, n: int, seed: int = 0, tasks: Sequence[str] = TASKS, system_prompt: str | None = SYSTEM_PROMPT
) -> list[ChatExample]:
    """``n`` synthetic conversations (system, user question, assistant answer) with checkable answers.

    Args:
        n: number of conversations (>= 1).
        seed: the random seed; the same seed gives the same data.
        tasks: any of ``TASKS`` (``add``: a + b for a, b < 50; ``reverse``: a 3-letter word reversed;
            ``km_to_m``: k km in meters).
        system_prompt: a system turn at the start of every conversation, or None for none.

    Returns:
        The examples; ``answer_of(example)`` is the expected answer.

    Example:
        >>> generate_chat_examples(n=1, seed=0)[0].messages[-1]
        {'role': 'assistant', 'content': '74'}
    """
    if not 1 <= n <= MAX_SYNTHETIC_EXAMPLES:
        raise UsageError(
            f"n must be in [1, {MAX_SYNTHETIC_EXAMPLES:,}], not {n}",
            hint="the tasks repeat long before that; held-out data needs another seed, not more rows",
        )
    if not tasks:
        raise UsageError("no task given", hint=f"use one or more of {', '.join(TASKS)}")
    for t in tasks:
        if t not in TASKS:
            raise UsageError(f"unknown task {t!r}", hint=f"use one of {', '.join(TASKS)}")
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        question, answer = _make_task(rng.choice(list(tasks)), rng)
        msgs = [{"role": "system", "content": system_prompt}] if system_prompt else []
        msgs += [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
        out.append(ChatExample(messages=tuple(msgs)))
    return out


def write_chat_jsonl(examples: Sequence[ChatExample], path: str | Path) -> Path:
    """Write examples as JSONL (``messages`` or ``prompt``/``completion`` per line); returns the path.

    The lines go to a temporary name beside ``path``, renamed to ``path`` once all are written: Ctrl-C or a
    full disk midway leaves no file under the final name (a part-written file would pass ``data validate``)."""
    p = Path(path)
    # say so before writing: the rename would fail naming the temporary file (a folder), or replace a device
    # (/dev/null, as root), a FIFO or a symlink loop by a regular file
    check_replaceable(p)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.part")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            for ex in examples:
                obj: dict[str, Any] = (
                    {"messages": list(ex.messages)}
                    if ex.conversational
                    else {"prompt": ex.prompt, "completion": ex.completion}
                )
                if ex.tools is not None:
                    obj["tools"] = list(ex.tools)
                fh.write(json.dumps(obj) + "\n")
        os.replace(tmp, p)
    except BaseException:  # KeyboardInterrupt included: the part-written file goes, the exception stays
        tmp.unlink(missing_ok=True)
        raise
    return p


def prompt_of(example: ChatExample) -> tuple[dict[str, Any], ...] | str:
    """The context before the last assistant turn (messages), or the prompt text."""
    if not example.conversational:
        return example.prompt or ""
    last = max(i for i, m in enumerate(example.messages) if m["role"] == "assistant")
    return example.messages[:last]


def answer_of(example: ChatExample) -> str:
    """The expected answer: the last assistant turn (its text blocks joined, for multimodal content), or the
    completion."""
    if not example.conversational:
        return example.completion or ""
    content = [m for m in example.messages if m["role"] == "assistant"][-1].get("content") or ""
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return str(content)


@dataclass(frozen=True)
class ChatDataWritten:
    """Synthetic chat data written to ``path``: how many conversations, the seed, the tasks, a system turn or not."""

    path: str
    conversations: int
    seed: int
    tasks: tuple[str, ...]
    system_turn: bool


def write_synthetic_chat(
    out: str | Path, *, n: int, seed: int = 0, tasks: Sequence[str] = TASKS, system_turn: bool = True
) -> ChatDataWritten:
    """``generate_chat_examples`` written as JSONL to ``out`` (see both for the arguments and errors)."""
    kwargs = {} if system_turn else {"system_prompt": None}
    path = write_chat_jsonl(generate_chat_examples(n=n, seed=seed, tasks=tasks, **kwargs), out)
    return ChatDataWritten(path=str(path), conversations=n, seed=seed, tasks=tuple(tasks), system_turn=system_turn)
