"""Reading and validating chat JSONL; the synthetic generator."""

from __future__ import annotations

import json

import pytest

from expkit.errors import InputError, UsageError
from expkit.finetune.chatdata import (
    ChatExample,
    answer_of,
    generate_chat_examples,
    prompt_of,
    read_chat_file,
    write_chat_jsonl,
)

GOOD = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}


def _write(tmp_path, rows):
    p = tmp_path / "d.jsonl"
    p.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return p


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"messages": [{"role": "user", "content": "only a question"}]}, r"d\.jsonl:3: .*no assistant turn"),
        (
            {"messages": [{"role": "robot", "content": "x"}, {"role": "assistant", "content": "y"}]},
            r"d\.jsonl:3: .*unknown role 'robot'",
        ),
        (
            {"messages": [{"role": "user", "content": "  "}, {"role": "assistant", "content": "y"}]},
            r"d\.jsonl:3: .*empty content",
        ),
        ("{not json", r"d\.jsonl:3:[0-9]+: invalid JSON"),
        ({"text": "plain"}, r"d\.jsonl:3: no 'messages'"),
    ],
)
def test_bad_lines_name_the_line(tmp_path, bad, message):
    path = _write(tmp_path, [GOOD, GOOD, bad, GOOD])
    with pytest.raises(InputError, match=message):
        read_chat_file(path)


def test_skip_mode_counts_and_keeps_line_numbers(tmp_path):
    bad = {"messages": [{"role": "user", "content": "q"}]}
    path = _write(tmp_path, [GOOD, bad, GOOD, "", bad])
    chat = read_chat_file(path, on_error="skip")
    assert [ex.line for ex in chat.examples] == [1, 3]
    assert sorted(chat.skipped) == [2, 5]
    assert "no assistant turn" in chat.skipped[2]


def test_all_lines_bad_is_an_error(tmp_path):
    path = _write(tmp_path, [{"messages": []}])
    with pytest.raises(InputError, match="no usable example"):
        read_chat_file(path, on_error="skip")


def test_prompt_completion_and_missing_file(tmp_path):
    path = _write(tmp_path, [{"prompt": "2+2=", "completion": "4"}])
    ex = read_chat_file(path).examples[0]
    assert not ex.conversational and prompt_of(ex) == "2+2=" and answer_of(ex) == "4"
    with pytest.raises(InputError, match="not found"):
        read_chat_file(tmp_path / "missing.jsonl")


def test_generator_is_deterministic_and_checkable(tmp_path):
    a = generate_chat_examples(n=30, seed=4)
    assert a == generate_chat_examples(n=30, seed=4)
    assert a != generate_chat_examples(n=30, seed=5)
    for ex in a:
        q = ex.messages[-2]["content"]
        ans = answer_of(ex)
        if q.startswith("What is"):
            x, y = q.removeprefix("What is ").removesuffix("?").split(" + ")
            assert int(ans) == int(x) + int(y)
        elif q.startswith("Reverse"):
            assert ans[::-1] == q.removeprefix("Reverse the word ").removesuffix(".")
        else:
            assert int(ans) == 1000 * int(q.split()[4])
    back = read_chat_file(write_chat_jsonl(a, tmp_path / "a.jsonl")).examples
    assert [e.messages for e in back] == [e.messages for e in a]


def test_generator_rejects_bad_arguments():
    with pytest.raises(UsageError, match=r"n must be in \[1, 1,000,000\], not 0"):
        generate_chat_examples(n=0)
    with pytest.raises(UsageError, match=r"not 10{30}"):  # `sft data -n 1000...0` once filled the memory
        generate_chat_examples(n=10**30)
    with pytest.raises(UsageError, match="unknown task 'poetry'"):
        generate_chat_examples(n=1, tasks=("poetry",))


def test_answer_of_multimodal_content_is_its_text():
    """Idefics3/SmolVLM/Llava-Next data carry content as blocks; check-stop compares the generation with the text
    (it compared a list with a string: no answer was ever right)."""
    blocks = [{"type": "image"}, {"type": "text", "text": "mo"}, {"type": "text", "text": "o"}]
    ex = ChatExample(
        messages=(
            {"role": "user", "content": [{"type": "text", "text": "cow?"}]},
            {"role": "assistant", "content": blocks},
        )
    )
    assert answer_of(ex) == "moo"
