"""profile_jsonl (keys, types, length percentiles, tokens) and validate_jsonl (every violation, its line)."""

from __future__ import annotations

import orjson
import pytest

from expkit.data import head_records, profile_jsonl, sample_records, validate_jsonl
from expkit.data.profile import text_of
from expkit.errors import InputError, UsageError


def _jsonl(tmp_path, rows, name="d.jsonl"):
    p = tmp_path / name
    p.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    return p


def _word_tokenizer(tmp_path, words):
    """A WordLevel tokenizer split on whitespace: its token count is the word count (hand-checkable)."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit

    tok = Tokenizer(WordLevel({w: i for i, w in enumerate(["[UNK]", *words])}, unk_token="[UNK]"))
    tok.pre_tokenizer = WhitespaceSplit()
    d = tmp_path / "tok"
    d.mkdir()
    tok.save(str(d / "tokenizer.json"))
    return d


def test_profile_counts_keys_types_and_lengths(tmp_path):
    rows = [{"text": "a " * k, "n": k} for k in range(1, 101)] + [{"text": None, "n": 1.5}]
    p = _jsonl(tmp_path, rows)
    prof = profile_jsonl(p, tokenizer_dir=_word_tokenizer(tmp_path, ["a"]))
    assert prof.read.records == 101 and prof.field == "text" and prof.field_present == 100
    assert {k.name: k.types for k in prof.keys} == {
        "text": {"string": 100, "null": 1},
        "n": {"integer": 100, "number": 1},
    }
    c = prof.chars
    # lengths 2, 4, ..., 200: numpy linear percentile p50 of 1..100 is 50.5 -> 101 characters
    assert (c.count, c.min, c.max, c.mean, c.percentiles["p50"], c.exact) == (100, 2, 200, 101.0, 101.0, True)
    t = prof.tokens
    assert (t.min, t.max, t.percentiles["p50"]) == (1, 100, 50.5)  # "a " * k is k words


def test_profile_chat_messages_and_sampled_percentiles(tmp_path):
    rows = [
        {"messages": [{"role": "user", "content": "x" * k}, {"role": "assistant", "content": "yy"}]}
        for k in range(1000)
    ]
    prof = profile_jsonl(_jsonl(tmp_path, rows), reservoir_size=100)
    assert prof.field == "messages" and prof.chars.max == 999 + 1 + 2  # joined with a newline
    assert not prof.chars.exact and 300 < prof.chars.percentiles["p50"] < 700
    assert text_of([{"type": "text", "text": "a"}, {"type": "image"}]) == "a"


def test_profile_missing_tokenizer(tmp_path):
    with pytest.raises(InputError, match=r"no tokenizer\.json"):
        profile_jsonl(_jsonl(tmp_path, [{"text": "a"}]), tokenizer_dir=tmp_path)


def test_validate_chat_reports_every_violation_with_its_line(tmp_path):
    good = {
        "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "a"},
        ]
    }
    rows = [
        good,
        {"messages": [{"role": "user", "content": "q"}]},
        {"msgs": []},
        {
            "messages": [
                {"role": "user", "content": 3},
                {"role": "system", "content": "late"},
                {"role": "assistant", "content": "a"},
            ]
        },
        [1, 2],
        good,
    ]
    p = tmp_path / "c.jsonl"
    p.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows) + b'{"messages": [}\n')
    rep = validate_jsonl(p, schema="chat")
    got = [(v.line, v.where, v.message.split(" (")[0].split(",")[0]) for v in rep.violations]
    assert got == [
        (2, "messages", "has no assistant message: nothing to train on"),
        (3, "messages", "missing"),
        (4, "messages[0].content", "must be a string"),
        (4, "messages[1].role", "a system message must come first"),
        (5, "", "a record must be a JSON object"),
        (7, "column 15", "invalid JSON: unexpected character"),
    ]
    assert not rep.ok and rep.violation_count == 6


def test_validate_prompt_completion_and_json_schema(tmp_path):
    p = _jsonl(tmp_path, [{"prompt": "p", "completion": "c"}, {"prompt": "p", "completion": ""}, {"prompt": 1}])
    rep = validate_jsonl(p, schema="prompt-completion")
    assert [(v.line, v.where) for v in rep.violations] == [(2, "completion"), (3, "prompt"), (3, "completion")]
    schema = tmp_path / "s.json"
    schema.write_text(
        '{"type": "object", "required": ["label"], "additionalProperties": false,'
        ' "properties": {"label": {"enum": ["pos", "neg"]}, "score": {"type": "number", "maximum": 1}}}'
    )
    q = _jsonl(tmp_path, [{"label": "pos", "score": 0.5}, {"label": "meh"}, {"score": 2, "x": 1}], name="l.jsonl")
    rep = validate_jsonl(q, schema=schema)
    assert [(v.line, v.where) for v in rep.violations] == [(2, "label"), (3, "label"), (3, "score"), (3, "x")]
    with pytest.raises(UsageError, match="neither chat nor prompt-completion"):
        validate_jsonl(q, schema="alpaca")


def test_head_and_sample(tmp_path):
    p = _jsonl(tmp_path, [{"i": i} for i in range(500)])
    assert [r.line for r in head_records(p, n=3).records] == [1, 2, 3]
    a = sample_records(p, n=10, seed=4)
    assert a == sample_records(p, n=10, seed=4) and a.seen == 500
    lines = [r.line for r in a.records]
    assert lines == sorted(lines) and len(set(lines)) == 10 and max(lines) > 50
    assert all(r.record["i"] == r.line - 1 for r in a.records)
    assert [r.line for r in sample_records(p, n=10, seed=5).records] != lines


def test_progress_reports_bytes_of_a_plain_file(tmp_path):
    p = tmp_path / "many.jsonl"
    p.write_bytes(b'{"text": "abc"}\n' * 140_000)  # two progress points: lines 65,536 and 131,072
    seen = []
    profile_jsonl(p, on_progress=lambda done, total: seen.append((done, total)))
    size = p.stat().st_size
    assert len(seen) == 2 and all(t == size and 0 < d <= size for d, t in seen) and seen[0][0] < seen[1][0]
    got = []
    validate_jsonl(p, schema="prompt-completion", on_progress=lambda d, t: got.append(d))
    assert len(got) == 2
