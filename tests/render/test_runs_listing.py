"""``runs ls`` on two Hugging Face runs (issue 37): only the flattened config keys that differ, cells cut with
an ellipsis, never a number cut mid-digit (``test_loss=0.0`` for 0.0649783 was printed before)."""

from __future__ import annotations

from expkit.render.runs import render_listing
from expkit.runs.store import RunListing, RunSummary


def _hf_run(i: int, lr: float) -> RunSummary:
    training_args = {f"arg_{k:03d}": k for k in range(150)}  # ~150 keys, as TrainingArguments has
    training_args |= {"learning_rate": lr, "output_dir": f"/tmp/out/a-very-long-output-directory-name-{i}" * 2}
    metrics = {f"eval_metric_{k}": 0.123456789 * k for k in range(12)} | {"test_loss": 0.0649783, "step": 30}
    return RunSummary(
        id=f"20261203-000000-00000{i}",
        name=f"hf-{i}",
        status="finished",
        created_at="2026-12-03T00:00:00",
        ended_at=None,
        kind="hf-trainer",
        commit=None,
        dirty=None,
        seed=42,
        group=None,
        final_metrics=metrics,
        config={"training_args": training_args, "model_config": {"n_layer": 2}},
    )


def test_piped_listing_shows_the_differing_keys_and_whole_numbers(capsys):
    render_listing(RunListing(store="runs", runs=(_hf_run(1, 1e-3), _hf_run(2, 5e-3)), broken=()))
    header, *rows = capsys.readouterr().out.splitlines()
    columns = header.split("\t")
    assert columns[6:-1] == ["training_args.learning_rate", "training_args.output_dir"]
    assert "training_args" not in columns  # never the whole dict as one column
    for row in rows:
        cells = row.split("\t")
        assert len(row) < 400
        assert cells[6] in ("0.001", "0.005") and cells[7].endswith("…") and len(cells[7]) == 24
        metrics = cells[-1]
        assert "more" in metrics and "… +" in metrics
        for item in metrics.split(", "):  # every shown value is whole
            if "=" in item:
                name, value = item.split("=")
                if name == "test_loss":
                    assert value == "0.0649783"
                else:
                    assert abs(float(value) - 0.123456789 * int(name.rsplit("_", 1)[1])) < 1e-5
