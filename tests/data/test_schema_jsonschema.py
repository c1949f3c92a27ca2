"""``data validate --schema FILE`` through the jsonschema library (Draft 2020-12, every keyword), and
integers beyond 64 bits kept exact by ``data head``/``data sample`` (issue 14)."""

from __future__ import annotations

import json

import pytest

from expkit.data.jsonl import dumps_record, iter_jsonl, loads_exact
from expkit.data.sampling import head_records, sample_records
from expkit.data.schema import validate_jsonl
from expkit.errors import InputError

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["id", "label"],
    "properties": {
        "id": {"type": "string", "pattern": "^ex-[0-9]+$"},
        "label": {"anyOf": [{"enum": ["pos", "neg"]}, {"type": "integer", "minimum": 0}]},
        "meta": {"$ref": "#/$defs/meta"},
    },
    "$defs": {"meta": {"type": "object", "properties": {"source": {"type": "string", "minLength": 2}}}},
}
RECORDS = [
    {"id": "ex-1", "label": "pos"},
    {"id": "example 2", "label": "pos"},  # pattern
    {"id": "ex-3", "label": "maybe"},  # anyOf
    {"id": "ex-4", "label": 1, "meta": {"source": "x"}},  # $ref -> minLength
    {"id": "ex-5", "label": -1},  # anyOf (minimum)
]


def _write(tmp_path, name, obj):
    p = tmp_path / name
    p.write_text(json.dumps(obj))
    return p


def _jsonl(tmp_path, rows, name="d.jsonl"):
    p = tmp_path / name
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def test_pattern_anyof_and_ref_are_enforced_as_jsonschema_enforces_them(tmp_path):
    from jsonschema import Draft202012Validator

    schema = _write(tmp_path, "s.json", SCHEMA)
    rep = validate_jsonl(_jsonl(tmp_path, RECORDS), schema=schema)
    expected = sum(len(list(Draft202012Validator(SCHEMA).iter_errors(r))) for r in RECORDS)
    assert expected == 4 and rep.violation_count == 4
    assert [(v.line, v.where) for v in rep.violations] == [(2, "id"), (3, "label"), (4, "meta.source"), (5, "label")]
    assert "does not match '^ex-[0-9]+$' (pattern)" in rep.violations[0].message
    assert rep.violations[1].message.endswith("(anyOf)") and rep.violations[2].message.endswith("(minLength)")


def test_ref_to_a_file_beside_the_schema(tmp_path):
    _write(tmp_path, "defs.json", {"$defs": {"lab": {"enum": ["a", "b"]}}})
    schema = _write(tmp_path, "s.json", {"properties": {"y": {"$ref": "defs.json#/$defs/lab"}}})
    rep = validate_jsonl(_jsonl(tmp_path, [{"y": "a"}, {"y": "c"}]), schema=schema)
    assert [(v.line, v.where) for v in rep.violations] == [(2, "y")]
    bad = _write(tmp_path, "s2.json", {"properties": {"y": {"$ref": "missing.json"}}})
    with pytest.raises(InputError, match=r"s2\.json: the schema's \$ref 'missing.json' cannot be resolved"):
        validate_jsonl(_jsonl(tmp_path, [{"y": 1}]), schema=bad)


def test_an_invalid_schema_is_an_input_error_naming_it(tmp_path):
    schema = _write(tmp_path, "bad.json", {"type": "strnig"})
    with pytest.raises(InputError, match=r"bad\.json: not a valid JSON Schema: .*strnig"):
        validate_jsonl(_jsonl(tmp_path, [{}]), schema=schema)


def test_a_schema_may_allow_records_that_are_not_objects(tmp_path):
    schema = _write(tmp_path, "s.json", {"type": "array", "items": {"type": "integer"}})
    rep = validate_jsonl(_jsonl(tmp_path, [[1, 2], [3, "x"]]), schema=schema)
    assert [(v.line, v.where) for v in rep.violations] == [(2, "[1]")]


def test_big_integers_are_compared_exactly(tmp_path):
    # 2**70 + 1 > maximum 2**70: invisible once orjson turns both into the float 1.1805916207174113e+21
    schema = _write(tmp_path, "s.json", {"properties": {"n": {"type": "integer", "maximum": 2**70}}})
    p = tmp_path / "big.jsonl"
    p.write_text(f'{{"n": {2**70}}}\n{{"n": {2**70 + 1}}}\n')
    rep = validate_jsonl(p, schema=schema)
    assert [(v.line, v.where) for v in rep.violations] == [(2, "n")]


def test_cli_validate_prints_file_line_per_violation_and_exit_codes(cli, tmp_path):
    schema = _write(tmp_path, "s.json", SCHEMA)
    data = _jsonl(tmp_path, RECORDS)
    res = cli("data", "validate", str(data), "--schema", str(schema))
    assert res.exit_code == 1
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith(str(data))]
    assert [ln.split(": ")[0].rsplit(":", 1)[1] for ln in lines] == ["2", "3", "4", "5"]
    res = cli("data", "validate", str(data), "--schema", str(_write(tmp_path, "bad.json", {"minLength": -1})), "--json")
    assert res.exit_code == 2
    err = json.loads(res.stdout)["error"]
    assert err["kind"] == "InputError" and "bad.json" in err["where"]


BIG = [{"id": 2**70, "neg": -(2**70), "nested": [1, 2**64 - 1, {"x": 2**70}], "f": 0.5}, {"id": 3}]


def test_reader_keeps_big_integers_exact_only_when_asked(tmp_path):
    p = tmp_path / "big.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in BIG))
    assert list(iter_jsonl(p, exact_ints=True)) == BIG
    assert next(iter(iter_jsonl(p)))["id"] == float(2**70)  # orjson's float: why exact_ints exists
    assert loads_exact(b'{"a": -1180591620717411303424}') == {"a": -(2**70)}
    assert dumps_record(BIG[0]) == json.dumps(BIG[0], separators=(",", ":"))


def test_head_and_sample_return_big_integers_unchanged(tmp_path):
    p = tmp_path / "big.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in BIG))
    assert head_records(p, n=1).records[0].record == BIG[0]
    assert [r.record for r in sample_records(p, n=2, seed=1).records] == BIG


@pytest.mark.parametrize("command", ["head", "sample"])
def test_cli_head_and_sample_print_big_integers_exactly(cli, tmp_path, command):
    p = tmp_path / "big.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in BIG))
    res = cli("data", command, str(p), "-n", "2")
    assert res.exit_code == 0, res.stderr
    assert [json.loads(ln) for ln in res.stdout.splitlines()] == BIG
    assert "1180591620717411303424" in res.stdout and "-1180591620717411303424" in res.stdout
    res = cli("data", command, str(p), "-n", "2", "--json")
    assert res.exit_code == 0, res.stderr
    assert [r["record"] for r in json.loads(res.stdout)["result"]["records"]] == BIG


def test_a_schema_that_refers_to_itself_without_end_is_an_input_error(tmp_path):
    schema = tmp_path / "ref.json"
    schema.write_text('{"$ref": "#"}')
    data = tmp_path / "d.jsonl"
    data.write_text('{"a": 1}\n')
    with pytest.raises(InputError, match=r"refers to itself without end"):
        validate_jsonl(data, schema=str(schema))


def test_a_300_deep_record_is_written_back():
    # orjson refuses to write past 254 levels ("Recursion limit reached", a traceback in `data head`)
    rec: dict = {"a": 1}
    for _ in range(300):
        rec = {"x": rec}
    assert json.loads(dumps_record(rec)) == rec
