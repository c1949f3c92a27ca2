"""The loop end to end on a tiny model: learning happens, exact resume, checkpoint refusals, NaN guard,
the run record."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch
from train_fixtures import TINY_MODEL, tiny_train

from expkit.errors import CheckFailed, InputError, UsageError
from expkit.runs.checkpoint import find_checkpoints, load_checkpoint
from expkit.train import TrainRequest, open_train_checkpoint, train_charlm


def test_training_lowers_val_loss_and_reports_checks(small_corpus, tmp_path):
    r = train_charlm(
        TrainRequest(
            model_config=TINY_MODEL,
            train_config=tiny_train(max_steps=30, lr_max=1e-2),
            corpus=small_corpus,
            record=False,
            checkpoint_dir=tmp_path,
        )
    )
    assert r.final_val_loss < r.initial_val_loss - 0.5
    assert r.steps == 30 and r.tokens == 30 * 4 * 32
    assert {type(c).__name__ for c in r.checks} == {"FirstLossCheck", "GradCheck"}
    assert all(c.verdict == "ok" for c in r.checks)
    assert abs(r.first_loss - r.ln_vocab) < 0.3
    assert r.mfu is None and "CPU" in r.mfu_reason


def test_resume_gives_the_same_losses_as_an_uninterrupted_run(small_corpus, tmp_path):
    cfg = tiny_train(max_steps=8, lr_max=1e-2)
    full = train_charlm(
        TrainRequest(
            model_config=TINY_MODEL, train_config=cfg, corpus=small_corpus, record=False, checkpoint_dir=tmp_path / "a"
        )
    )
    half = train_charlm(
        TrainRequest(
            model_config=TINY_MODEL,
            train_config=cfg,
            corpus=small_corpus,
            record=False,
            checkpoint_dir=tmp_path / "b",
            stop_at_step=4,
        )
    )
    assert half.checkpoint.endswith("step-0000004")
    rest = train_charlm(
        TrainRequest(
            model_config=TINY_MODEL,
            train_config=cfg,
            corpus=small_corpus,
            record=False,
            checkpoint_dir=tmp_path / "b",
            resume=half.checkpoint,
        )
    )
    assert rest.start_step == 4
    assert half.losses + rest.losses == full.losses  # bitwise: same batches, same states, same order
    assert rest.final_val_loss == full.final_val_loss
    # and the same weights and optimizer state at step 8, read through the one checkpoint format
    a, b = load_checkpoint(full.checkpoint), load_checkpoint(rest.checkpoint)
    assert full.checkpoint.endswith("step-0000008") and rest.checkpoint.endswith("step-0000008")
    assert a["model"].keys() == b["model"].keys() and all(torch.equal(a["model"][k], b["model"][k]) for k in a["model"])
    sa, sb = a["optimizer"]["state"], b["optimizer"]["state"]
    assert sa.keys() == sb.keys() and all(torch.equal(sa[k]["exp_avg"], sb[k]["exp_avg"]) for k in sa)


def test_checkpoint_from_another_config_is_refused_with_the_difference(small_corpus, tmp_path):
    r = train_charlm(
        TrainRequest(
            model_config=TINY_MODEL,
            train_config=tiny_train(max_steps=2),
            corpus=small_corpus,
            record=False,
            checkpoint_dir=tmp_path,
        )
    )
    other = replace(TINY_MODEL, n_layer=2)
    with pytest.raises(InputError, match=r"n_layer: checkpoint 1 vs now 2"):
        train_charlm(
            TrainRequest(
                model_config=other,
                train_config=tiny_train(max_steps=4),
                corpus=small_corpus,
                record=False,
                resume=r.checkpoint,
            )
        )


def test_truncated_checkpoint_is_refused_and_the_previous_good_one_kept(small_corpus, tmp_path):
    cfg = tiny_train(max_steps=4, checkpoint_interval=2)
    train_charlm(
        TrainRequest(
            model_config=TINY_MODEL, train_config=cfg, corpus=small_corpus, record=False, checkpoint_dir=tmp_path
        )
    )
    good, last = find_checkpoints(tmp_path)
    weights = last / "tensors.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])  # a crash mid-copy, a full disk
    with pytest.raises(InputError, match="truncated") as exc:
        train_charlm(
            TrainRequest(model_config=TINY_MODEL, train_config=cfg, corpus=small_corpus, record=False, resume=last)
        )
    assert str(good) in exc.value.hint
    assert open_train_checkpoint(good).step == 2  # still there and still valid


def test_nan_guard_stops_and_names_the_module(small_corpus):
    # lr 1e6 blows the weights up within a few steps; the guard names where the first NaN/inf appears
    with pytest.raises(CheckFailed, match=r"at step \d+: module '[\w.]+' produced the first (nan|inf)"):
        train_charlm(
            TrainRequest(
                model_config=TINY_MODEL,
                train_config=tiny_train(max_steps=30, lr_max=1e6, grad_clip=1e9),
                corpus=small_corpus,
                record=False,
            )
        )


def test_bad_inputs_are_usage_errors(small_corpus, tmp_path):
    with pytest.raises(UsageError, match="seq_len=64 exceeds the model's block_size=32"):
        train_charlm(
            TrainRequest(
                model_config=TINY_MODEL, train_config=tiny_train(seq_len=64), corpus=small_corpus, record=False
            )
        )
    tiny = tmp_path / "tiny.txt"
    tiny.write_text("x" * 30)
    with pytest.raises(InputError, match="fewer than one window"):
        train_charlm(TrainRequest(model_config=TINY_MODEL, train_config=tiny_train(), corpus=tiny, record=False))


def test_run_is_recorded_with_metrics_schedule_figure_and_fingerprint(small_corpus, tmp_path):
    drawn = []

    def draw(schedule, path):
        drawn.append(schedule.max_steps)  # called before step 1, with the full schedule
        path.write_bytes(b"png")
        return path

    r = train_charlm(
        TrainRequest(
            model_config=TINY_MODEL, train_config=tiny_train(max_steps=3), corpus=small_corpus, store=tmp_path / "runs"
        ),
        draw_schedule=draw,
    )
    assert drawn == [3]
    rec = json.loads((tmp_path / "runs" / r.run_id / "run.json").read_text())
    assert rec["status"] == "finished"
    assert rec["config"]["corpus"]["fingerprint"] == small_corpus.fingerprint
    metrics = [json.loads(line) for line in (tmp_path / "runs" / r.run_id / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics if "loss" in m] == [0, 1, 2]
    assert r.schedule_figure.endswith("lr_schedule.png") and r.checkpoint.startswith(r.run_dir)


def test_time_budget_calibrates_max_steps(small_corpus):
    r = train_charlm(
        TrainRequest(
            model_config=TINY_MODEL,
            train_config=tiny_train(max_steps=None),
            corpus=small_corpus,
            record=False,
            minutes=0.05,
        )
    )
    assert r.calibration is not None and r.calibration.max_steps == r.schedule.max_steps
    # the count follows from the measured step time (budget / step_s, at least warm-up + 2); wall time is not
    # compared with the budget: a machine whose load changes after calibration overshoots it (issue 36)
    cal = r.calibration
    assert cal.budget_s <= 0.05 * 60 and cal.step_s > 0  # what is left of the 3 s after the setup
    assert cal.max_steps == max(tiny_train(max_steps=None).warmup_steps + 2, int(cal.budget_s / cal.step_s))
    assert r.steps <= r.schedule.max_steps


def test_num_threads_is_restored_after_training(small_corpus):
    import torch

    before = torch.get_num_threads()
    r = train_charlm(
        TrainRequest(
            model_config=TINY_MODEL,
            train_config=tiny_train(max_steps=1, num_threads=1),
            corpus=small_corpus,
            record=False,
        )
    )
    assert r.steps == 1 and torch.get_num_threads() == before
