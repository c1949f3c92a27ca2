"""``plot curves`` on expkit's own records (issue 37 item 5): a step logged twice (a final ``evaluate()`` at the last
training step) keeps the last value and says so; runs of two configs are never averaged as seeds unless asked;
a group name stands for its finished runs."""

from __future__ import annotations

import json
from pathlib import Path

import expkit.runs as runs


def _store(root: Path) -> None:
    for lr in (1e-3, 5e-3):
        for seed in (0, 1):
            with runs.start(
                config={"training_args": {"learning_rate": lr, "bs": 8}}, seed=seed, store=root, group="hf"
            ) as r:
                for step in (10, 20, 30):
                    r.log(step, eval_loss=3.0 - step * lr * 10 + 0.01 * seed)
                r.log(30, eval_loss=2.5 + 0.01 * seed)  # trainer.evaluate() after train(): step 30 again


def test_a_group_is_plotted_one_band_per_config_with_the_repeat_noted(cli, tmp_path):
    _store(tmp_path / "runs")
    res = cli(
        "plot",
        "curves",
        "hf",
        "--metric",
        "eval_loss",
        "--store",
        str(tmp_path / "runs"),
        "--out",
        str(tmp_path / "c.png"),
        "--json",
    )
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)["result"]
    groups = {g["group"]: g for g in out["groups"]}
    assert set(groups) == {"training_args.learning_rate=0.001", "training_args.learning_rate=0.005"}
    assert all(g["n_seeds"] == 2 for g in groups.values())
    assert groups["training_args.learning_rate=0.001"]["final_mean"] == 2.505  # the last value at step 30
    assert sum("logged twice" in n for n in out["notes"]) == 4
    assert (tmp_path / "c.png").stat().st_size > 1000


def test_group_by_still_overrides_and_an_unknown_group_is_one_line(cli, tmp_path):
    _store(tmp_path / "runs")
    res = cli(
        "plot",
        "curves",
        "hf",
        "-m",
        "eval_loss",
        "--group-by",
        "config.training_args.bs",
        "--store",
        str(tmp_path / "runs"),
        "--out",
        str(tmp_path / "c.png"),
        "--json",
    )
    assert res.exit_code == 0, res.stderr
    assert [g["n_seeds"] for g in json.loads(res.stdout)["result"]["groups"]] == [4]  # asked for: one group
    res = cli("plot", "curves", "nope", "--store", str(tmp_path / "runs"), "--out", str(tmp_path / "c.png"))
    assert res.exit_code == 2 and "nope" in res.stderr
