"""RunRecord: run.json round-trips through one typed record; bad fields are named; configs with
non-string keys are kept (issue 14, item 6)."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from expkit.errors import InputError
from expkit.runs import start
from expkit.runs.runrecord import SCHEMA_VERSION, RunRecord
from expkit.runs.store import read_record, read_run


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("EXPKIT_SEED", raising=False)
    monkeypatch.delenv("EXPKIT_RUN_DIR", raising=False)
    return tmp_path / "runs"


def test_a_real_run_round_trips_through_the_record(store: Path) -> None:
    with start(config={"lr": 0.1}, seed=3, store=store) as run:
        run.log(1, loss=2.0)
    raw = orjson.loads((run.dir / "run.json").read_bytes())
    rec = RunRecord.from_json(raw)
    assert rec.to_json() == raw  # nothing lost, nothing invented
    assert rec.schema == SCHEMA_VERSION and rec.seed.seed == 3 and rec.hardware.cpu_cores_logical == os.cpu_count()
    assert rec.final_metrics == {"step": 1, "loss": 2.0} and rec.status == "finished" and not rec.diverged


def test_model_config_with_int_keys_is_kept_with_a_note(store: Path) -> None:
    """Issue 14: start(config=model.config.to_dict()) was refused ("config key 0 ... is a int")."""
    cfg = {"model": {"id2label": {0: "NEG", 1: "POS"}, "label2id": {"NEG": 0, "POS": 1}}}
    with start(config=cfg, seed=0, store=store) as run:
        pass
    rec = read_record(run.dir)
    assert rec.config["model"]["id2label"] == {"0": "NEG", "1": "POS"}
    assert len(rec.config_notes) == 2 and "stored as the string '0'" in rec.config_notes[0]
    assert "model.id2label" in rec.config_notes[0]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda r: r.update(seed={**r["seed"], "seed": "seven"}),
            r"field 'seed\.seed' is a str \('seven'\), expected int",
        ),
        (lambda r: r.update(world_size="2"), r"field 'world_size' is a str"),
        (lambda r: r.update(color="red"), r"unknown field 'color'"),
        (lambda r: r["code"].update(shiny=True), r"unknown field 'code\.shiny'"),
        (lambda r: r.update(schema=99), r"schema 99; this expkit reads up to"),
    ],
)
def test_a_bad_field_is_named_with_the_run(store: Path, edit, message: str) -> None:
    with start(config={}, seed=0, store=store) as run:
        pass
    raw = orjson.loads((run.dir / "run.json").read_bytes())
    edit(raw)
    (run.dir / "run.json").write_bytes(orjson.dumps(raw))
    with pytest.raises(InputError, match=message) as info:
        read_record(run.dir)
    assert run.id in str(info.value)


def test_schema_1_records_are_read_with_their_extra_keys(tmp_path: Path) -> None:
    old = {
        "schema": 1,
        "id": "20250101-000000-aaaaaa",
        "status": "finished",
        "repro_of": "x",
        "seed": {
            "seed": 1,
            "source": "argument",
            "seeded": ["python"],
            "not_seeded": {},
            "note": None,
            "deterministic": False,
        },
        "hardware": {
            "cpu_model": "cpu",
            "cpu_cores_logical": 2,
            "cpu_cores_physical": 1,
            "ram_bytes": 1,
            "hostname": "h",
            "gpu_names": [],
            "gpu_memory_bytes": [],
            "gpu_driver": None,
            "missing": {},
        },
    }
    d = tmp_path / old["id"]
    d.mkdir()
    (d / "run.json").write_bytes(orjson.dumps(old))
    rec = read_record(d)
    assert rec.extra == {"repro_of": "x"} and rec.schema == SCHEMA_VERSION and rec.hostname == "h"
    assert read_run(d)["extra"]["repro_of"] == "x"
