"""``expkit plot curves`` from files and from a run directory: figure written, summary printed."""

from __future__ import annotations

import json

import numpy as np
import orjson


def _seed_csv(path, groups=(("a", 1.0), ("b", 1.3)), seeds=4, steps=60):
    rng = np.random.default_rng(0)
    lines = ["run,group,step,loss"]
    for g, k in groups:
        for s in range(seeds):
            for step in range(0, steps + 1):
                lines.append(f"{g}{s},{g},{step},{k * 3 / np.sqrt(step + 1) + rng.normal(0, 0.02):.6f}")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_curves_from_csv_png_and_json(cli, tmp_path):
    f = _seed_csv(tmp_path / "seeds.csv")
    out = tmp_path / "fig.png"
    r = cli("plot", "curves", str(f), "--out", str(out), "--ema", "0.5", "--json")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)["result"]
    assert [g["n_seeds"] for g in d["groups"]] == [4, 4]
    assert d["difference"]["groups"] == "a - b" and d["difference"]["n_excludes_zero"] > 50
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_curves_svg_text_output(cli, tmp_path):
    f = _seed_csv(tmp_path / "seeds.csv")
    out = tmp_path / "fig.svg"
    r = cli("plot", "curves", str(f), "--out", str(out), "--linear-x")
    assert r.exit_code == 0, r.stderr
    assert "a: 4 seeds, final loss" in r.stdout and "interval of the difference excludes 0" in r.stdout
    assert out.read_text().lstrip().startswith("<?xml")


def test_curves_from_run_directories_grouped_by_config(cli, tmp_path):
    dirs = []
    for lr, k in (("0.001", 1.0), ("0.003", 0.8)):
        for s in range(3):
            d = tmp_path / "runs" / f"r{lr}_{s}"
            d.mkdir(parents=True)
            (d / "run.json").write_bytes(orjson.dumps({"config": {"lr": lr}}))
            rows = [{"step": i, "time": 1.7e9 + i, "loss": k * 2 / (i + 1) + 0.01 * s} for i in range(1, 30)]
            (d / "metrics.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
            dirs.append(str(d))
    r = cli(
        "plot", "curves", *dirs, "--group-by", "config.lr", "--x", "time", "--out", str(tmp_path / "f.png"), "--json"
    )
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)["result"]
    assert {g["group"] for g in d["groups"]} == {"0.001", "0.003"}
    assert d["groups"][0]["final_x"] == 28.0  # time is relative to the first record


def test_curves_bad_inputs(cli, tmp_path):
    f = _seed_csv(tmp_path / "seeds.csv")
    r = cli("plot", "curves", str(f), "--metric", "acc", "--out", str(tmp_path / "f.png"))
    assert r.exit_code == 2 and "no rows with metric 'acc'" in r.stderr
    r = cli("plot", "curves", str(f), "--out", str(tmp_path / "f.jpg"))
    assert r.exit_code == 2 and "must end in .png or .svg" in r.stderr
    r = cli("plot", "curves", str(tmp_path / "missing.csv"), "--store", str(tmp_path / "nostore"))
    assert r.exit_code == 2 and "missing.csv: no such file or run directory" in r.stderr


def test_curves_from_the_run_store_by_run_id(cli, tmp_path):
    runs = __import__("pytest").importorskip("expkit.runs.run")
    store = tmp_path / "store"
    ids = []
    for lr, k in ((1e-3, 1.0), (3e-3, 0.7)):
        for s in range(2):
            with runs.start(config={"lr": lr}, seed=s, store=store, name=f"lr{lr:g}") as run:
                for step in range(1, 20):
                    run.log(step, loss=k * 2.0 / step + 0.01 * s)
            ids.append(run.id)
    r = cli(
        "plot",
        "curves",
        *ids,
        "--store",
        str(store),
        "--group-by",
        "config.lr",
        "--out",
        str(tmp_path / "f.png"),
        "--json",
    )
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)["result"]
    assert sorted(g["group"] for g in d["groups"]) == ["0.001", "0.003"]
    assert all(g["n_seeds"] == 2 for g in d["groups"])
    assert d["difference"]["n_points"] == 19
