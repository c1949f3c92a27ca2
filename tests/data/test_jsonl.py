"""iter_jsonl on good, odd and bad files: errors name file:line:column, skip never hides lines."""

from __future__ import annotations

import gzip
import io
import sys

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expkit.data import JsonlTally, iter_jsonl
from expkit.errors import InputError, UsageError


def _write(tmp_path, data: bytes, name: str = "d.jsonl"):
    p = tmp_path / name
    p.write_bytes(data)
    return p


records = st.lists(
    st.dictionaries(
        st.text(max_size=5),
        st.one_of(st.integers(-(10**6), 10**6), st.text(max_size=20), st.booleans(), st.none()),
        max_size=4,
    ),
    max_size=30,
)


@given(recs=records)
@settings(max_examples=40, deadline=None)
def test_round_trip(tmp_path_factory, recs):
    p = tmp_path_factory.mktemp("rt") / "r.jsonl"
    p.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    assert list(iter_jsonl(p)) == recs


def test_bom_crlf_blank_lines_and_gzip(tmp_path):
    data = b'\xef\xbb\xbf{"a": 1}\r\n\r\n   \n{"a": 2}\r\n{"a": 3}'  # no newline at the end, but complete
    p = _write(tmp_path, data)
    tally = JsonlTally()
    assert [r["a"] for r in iter_jsonl(p, tally=tally)] == [1, 2, 3]
    assert (tally.lines, tally.blank, tally.records) == (5, 2, 3)
    gz = tmp_path / "d.jsonl.gz"
    gz.write_bytes(gzip.compress(data))
    assert [r["a"] for r in iter_jsonl(gz)] == [1, 2, 3]


def test_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"x": 1}\n{"x": 2}\n')))
    assert [r["x"] for r in iter_jsonl("-")] == [1, 2]


def _middle_bad(tmp_path):
    lines = [orjson.dumps({"i": i}) for i in range(30)]
    lines[16] = b'{"i": 16, "text": "unterminated}'  # line 17
    lines[22] = b'{"i": 22,, }'  # line 23
    return _write(tmp_path, b"\n".join(lines) + b"\n")


def test_invalid_json_in_the_middle_raise_names_line_column_and_snippet(tmp_path):
    p = _middle_bad(tmp_path)
    with pytest.raises(
        InputError, match=r"d\.jsonl:17:33: invalid JSON: .* near '\.\.\.i\": 16, \"text\": \"unterminated\}'"
    ):
        list(iter_jsonl(p))


def test_skip_reports_count_and_lines_and_keeps_every_other_record(tmp_path):
    p = _middle_bad(tmp_path)
    tally = JsonlTally()
    got = [r["i"] for r in iter_jsonl(p, on_error="skip", tally=tally)]
    assert got == [i for i in range(30) if i not in (16, 22)]
    s = tally.summary()
    assert (s.skipped, s.first_skipped_lines, s.records) == (2, (17, 23), 28)
    # without a tally, skip still tells: a warning at the end
    with pytest.warns(UserWarning, match=r"skipped 2 invalid line\(s\), first at line\(s\) 17, 23"):
        assert len(list(iter_jsonl(p, on_error="skip"))) == 28


def test_collect_keeps_each_error(tmp_path):
    tally = JsonlTally()
    list(iter_jsonl(_middle_bad(tmp_path), on_error="collect", tally=tally))
    assert [e.line for e in tally.errors] == [17, 23]
    assert tally.errors[1].column == 10  # the second comma of {"i": 22,, }
    with pytest.raises(UsageError, match="needs a tally"):
        iter_jsonl(tmp_path / "x.jsonl", on_error="collect").__next__()


def test_invalid_utf8_names_the_byte(tmp_path):
    p = _write(tmp_path, b'{"a": 1}\n{"a": "caf\xe9"}\n')
    with pytest.raises(InputError, match=r":2:11: invalid UTF-8 \(byte 0xe9\)"):
        list(iter_jsonl(p))


def test_truncated_last_line_is_an_error_with_its_line(tmp_path):
    p = _write(tmp_path, b'{"a": 1}\n{"a": 2}\n{"a": "cut in the mid')
    with pytest.raises(InputError, match=r":3:\d+: the last line is cut"):
        list(iter_jsonl(p))


def test_empty_missing_and_directory(tmp_path):
    assert list(iter_jsonl(_write(tmp_path, b""))) == []
    with pytest.raises(InputError, match=r"missing\.jsonl: no such file"):
        list(iter_jsonl(tmp_path / "missing.jsonl"))
    with pytest.raises(InputError, match="is a directory"):
        list(iter_jsonl(tmp_path))


def test_corrupt_gzip_is_an_input_error(tmp_path):
    good = gzip.compress(b'{"a": 1}\n' * 1000)
    p = _write(tmp_path, good[: len(good) // 2], "cut.jsonl.gz")
    with pytest.raises(InputError, match=r"cannot read line \d+: the data is cut short"):
        list(iter_jsonl(p))


def test_unknown_on_error():
    with pytest.raises(UsageError, match="on_error='ignore'"):
        next(iter_jsonl("x.jsonl", on_error="ignore"))  # type: ignore[arg-type]


def test_a_single_100mb_line_streams_with_memory_bounded_by_the_line(tmp_path):
    from expkit.data import peak_memory

    big = tmp_path / "big.jsonl"
    n = 100 * 2**20
    with open(big, "wb") as f:
        f.write(b'{"id": 1, "text": "')
        f.write(b"x" * n)
        f.write(b'"}\n{"id": 2, "text": "short"}\n')
    m = peak_memory(_lengths, str(big), trace_python=False)
    assert m.result == [n, 5]
    # the line as bytes + the parsed str (+ slack): bounded by a few copies of the line, not a crash
    assert n <= m.peak_above_baseline_bytes < 4 * n


def _lengths(path: str) -> list[int]:
    return [len(r["text"]) for r in iter_jsonl(path)]


def test_iter_jsonl_objects_skips_bad_lines_and_non_objects_when_asked(tmp_path):
    from expkit.data.jsonl import JsonlTally, iter_jsonl_objects

    p = tmp_path / "rows.jsonl"
    p.write_text('{"a": 1}\n[1, 2]\n{"a":\n\n{"a": 4}\n')  # line 2 a list, line 3 bad JSON, line 4 blank
    with pytest.raises(InputError, match=r"a JSON list, not an object"):
        list(iter_jsonl_objects(p))
    tally = JsonlTally()
    rows = list(iter_jsonl_objects(p, on_error="collect", tally=tally))
    assert rows == [(1, {"a": 1}), (5, {"a": 4})]
    assert tally.skipped == 2 and tally.first_skipped_lines == [2, 3] and tally.blank == 1
    assert [e.line for e in tally.errors] == [2, 3]
    # a caller that refuses a record itself counts it the same way
    tally.skip_line(5)
    assert tally.summary().skipped == 3 and tally.summary().records == 1


def test_compressed_and_utf16_files_get_their_own_hint_not_iconv_latin1(tmp_path):
    import gzip

    from expkit.data.csvfile import iter_csv_rows
    from expkit.errors import InputError

    cases = {
        "g.jsonl": (gzip.compress(b'{"a": 1}\n'), "gzip-compressed: rename it to \\*.gz"),
        "z.jsonl": (b"\x28\xb5\x2f\xfd" + b"\x80" * 8 + b"\n", "Zstandard-compressed: zstd -d"),
        "u.jsonl": ('{"a": 1}\n'.encode("utf-16"), "UTF-16 text: iconv -f utf-16"),
        "l.jsonl": ('{"a": "h\u00e9"}\n'.encode("latin-1"), "iconv -f latin1"),
    }
    for name, (data, hint) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(InputError, match=hint):
            list(iter_jsonl(tmp_path / name))
    (tmp_path / "g.csv").write_bytes(gzip.compress(b"model,item,score\n"))
    with pytest.raises(InputError, match="gzip-compressed"):
        list(iter_csv_rows(tmp_path / "g.csv"))


# --- a key given twice in one record (issue 21: json and orjson keep the last silently) ----------------------


def test_a_key_given_twice_is_refused_naming_the_key_and_line(tmp_path):
    from expkit.data.jsonl import iter_jsonl_objects

    p = tmp_path / "r.jsonl"
    p.write_text('{"model": "a", "item": 1, "score": 1}\n{"model": "a", "item": 2, "score": 1, "score": 0}\n')
    assert [r for _, r in iter_jsonl_objects(p)][1]["score"] == 0  # without the check: the last one, silently
    with pytest.raises(InputError, match=r"key 'score' appears twice") as info:
        list(iter_jsonl_objects(p, distinct_keys=True))
    assert info.value.line == 2


@pytest.mark.parametrize(
    "line",
    [
        '{"model": "a", "meta": {"score": 2}, "score": 1}',  # the same name at another level
        '{"text": "say \\"score\\": 1", "score": 1}',  # inside a string
        '{"score" : 1, "model" : "a"}',  # spacing the cheap test does not count
        '{"a": {"b": 1, "c": {"d": [1, {"e": 2}]}}, "score": 1}',  # nested objects
    ],
)
def test_records_that_only_look_like_duplicates_are_kept(tmp_path, line):
    from expkit.data.jsonl import iter_jsonl_objects

    p = tmp_path / "r.jsonl"
    p.write_text(line + "\n")
    assert [r for _, r in iter_jsonl_objects(p, distinct_keys=True)] == [orjson.loads(line)]


def test_a_nested_duplicate_or_a_spaced_one_is_found(tmp_path):
    from expkit.data.jsonl import JsonlTally, iter_jsonl_objects

    p = tmp_path / "r.jsonl"
    p.write_text(
        '{"score" : 1, "score" : 0}\n{"m": {"x": 1}, "m": {"x": 2}}\n{"ok": 1}\n'
        # spacing undercounts by one and the nested object overcounts by one: the cheap count alone matched
        '{"score" : 1, "score" : 0, "m": {"x": 1}}\n'
    )
    tally = JsonlTally()
    kept = [r for _, r in iter_jsonl_objects(p, distinct_keys=True, on_error="collect", tally=tally)]
    assert kept == [{"ok": 1}] and tally.skipped == 3
    assert [e.line for e in tally.errors] == [1, 2, 4]
    assert "key 'score' appears twice" in str(tally.errors[0]) and "key 'm' appears twice" in str(tally.errors[1])


# issue 36: the reader's fast path reads a regular file without numbering its lines, and the checked readers look
# at 64 KiB of lines at a time; a line that needs attention anywhere in a long file must still be found and named
_FILLER = b'{"id": 0, "text": "a short record of filler"}\n'


def _long_file(tmp_path, bad: bytes, at: int, n: int = 5000):
    """``n`` flat records (~240 KB: several chunks) with ``bad`` as line ``at``."""
    lines = [_FILLER] * n
    lines[at - 1] = bad
    p = tmp_path / "long.jsonl"
    p.write_bytes(b"".join(lines))
    return p


@pytest.mark.parametrize("at", [1, 2, 1500, 4999, 5000])
def test_a_bad_line_deep_in_a_long_file_is_named_at_its_line(tmp_path, at):
    p = _long_file(tmp_path, b'{"id": 1, "text": oops}\n', at)
    seen = []
    with pytest.raises(InputError, match=rf"long.jsonl:{at}:"):
        for rec in iter_jsonl(p):
            seen.append(rec)
    assert len(seen) == at - 1  # the records before it came out first
    tally = JsonlTally()
    assert sum(1 for _ in iter_jsonl(p, on_error="skip", tally=tally)) == 4999
    assert tally.first_skipped_lines == [at] and tally.lines == 5000
    tally = JsonlTally()  # exact_ints reads 64 KiB chunks: a chunk without a 19-digit run is parsed line by line
    lines = [tally.lines for _ in iter_jsonl(p, on_error="skip", tally=tally, exact_ints=True)]
    assert lines == [n for n in range(1, 5001) if n != at] and tally.first_skipped_lines == [at]
    with pytest.raises(InputError, match=rf"long.jsonl:{at}:"):
        sum(1 for _ in iter_jsonl(p, exact_ints=True))


def test_blank_lines_and_a_late_bom_line_keep_their_numbers_in_the_fast_path(tmp_path):
    p = _long_file(tmp_path, b"\n", 1200)  # a blank line ends the fast loop; the rest is read line by line
    with p.open("ab") as f:
        f.write(b'{"id": 1, "text": oops}\n')
    with pytest.raises(InputError, match=r"long.jsonl:5001:"):
        sum(1 for _ in iter_jsonl(p))
    with pytest.warns(UserWarning, match=r"first at line\(s\) 5001"):
        assert sum(1 for _ in iter_jsonl(p, on_error="skip")) == 4999


@pytest.mark.parametrize("at", [3, 3000, 5000])
def test_checks_find_their_line_in_any_chunk(tmp_path, at):
    """distinct_keys and exact_ints test 64 KiB of lines at once; the line they flag is still the one named."""
    p = _long_file(tmp_path, b'{"id": 1, "id": 2, "text": "x"}\n', at)
    with pytest.raises(InputError, match=rf"long.jsonl:{at}: key 'id' appears twice"):
        sum(1 for _ in iter_jsonl(p, distinct_keys=True))
    big = _long_file(tmp_path, b'{"id": 1180591620717411303424, "text": "x"}\n', at)
    tally = JsonlTally()
    ids = [(tally.lines, r["id"]) for r in iter_jsonl(big, exact_ints=True, distinct_keys=True, tally=tally)]
    assert ids[at - 1] == (at, 2**70) and type(ids[at - 1][1]) is int and ids[0] == (1, 0)
    assert [r["id"] for r in iter_jsonl(big)][at - 1] == float(2**70)  # without exact_ints: orjson's float


def test_a_record_900_deep_is_read_and_one_past_orjsons_limit_is_one_line_error(tmp_path):
    """issue 36: a 900-deep record stopped `data head` with a RecursionError in the big-integer walk; orjson reads
    1024 levels, past that the line is refused at file:line."""
    deep = tmp_path / "deep.jsonl"
    deep.write_text(
        '{"a": 1}\n' + "[" * 900 + "12345678901234567890123" + "]" * 900 + "\n" + '{"x":' * 900 + "1" + "}" * 900 + "\n"
    )
    recs = list(iter_jsonl(deep, exact_ints=True, tally=JsonlTally()))
    inner = recs[1]
    for _ in range(900 - 1):
        inner = inner[0]
    assert inner == [12345678901234567890123]
    deeper = tmp_path / "deeper.jsonl"
    deeper.write_text('{"a": 1}\n' + "[" * 1100 + "]" * 1100 + "\n")
    with pytest.raises(InputError, match=r"deeper.jsonl:2:.*depth"):
        list(iter_jsonl(deeper, exact_ints=True, tally=JsonlTally()))
