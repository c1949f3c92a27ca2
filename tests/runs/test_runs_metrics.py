"""What `runs exec` reads from training output (issue 14, item 3): Trainer dict lines, NaN/Infinity,
[rankN]: prefixes, and a SIGKILLed run's metrics from disk."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from expkit.runs.execute import ExecRequest, execute
from expkit.runs.metrics import parse_metrics_line, summarize_metrics
from expkit.runs.store import list_runs, read_record

PY = sys.executable


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for var in ("EXPKIT_SEED", "EXPKIT_RUN_DIR", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "runs"


def test_parse_trainer_json_nan_and_rank_lines() -> None:
    # transformers 5 prints string values; the step is not in the dict
    assert parse_metrics_line(b"{'loss': '2.31', 'grad_norm': '1.5', 'learning_rate': '5e-05', 'epoch': 0.5}") == (
        {"loss": 2.31, "grad_norm": 1.5, "learning_rate": 5e-05, "epoch": 0.5},
        None,
        "trainer",
    )
    rec, _, kind = parse_metrics_line(b'{"step": 3, "loss": NaN, "acc": Infinity, "x": "-inf"}')
    assert kind == "json" and math.isnan(rec["loss"]) and rec["acc"] == math.inf and rec["x"] == -math.inf
    rec, _, _ = parse_metrics_line(b"{'loss': nan, 'epoch': 1.0}")  # a Python repr of a NaN float
    assert math.isnan(rec["loss"])
    assert parse_metrics_line(b'[rank1]:{"step": 2, "loss": 0.5}')[:2] == ({"step": 2, "loss": 0.5}, 1)
    assert parse_metrics_line(b"{'note': 'hello'}") is None  # text, not metrics
    assert parse_metrics_line(b"{'loss': __import__('os').system('x')}") is None  # never evaluated
    assert parse_metrics_line(b"{" * 5000 + b"}" * 5000) is None


TRAINER_LIKE = r"""
import json, sys
print({'loss': '2.5', 'grad_norm': '1.0', 'learning_rate': '1e-3', 'epoch': 0.25})
print({'loss': '1.5', 'grad_norm': '0.9', 'learning_rate': '1e-3', 'epoch': 0.5})
print(json.dumps({"step": 10, "val_loss": float("nan")}))
print({'train_runtime': '1.0', 'train_loss': '2.0', 'epoch': 1.0})
"""


def test_exec_reads_trainer_lines_counts_steps_and_keeps_nan(store: Path, tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(TRAINER_LIKE)
    res = execute(ExecRequest([PY, "t.py"], store=store, seed=0))
    rec = read_record(Path(res.run_dir))
    assert res.status == "finished" and rec.status == "finished"
    assert rec.final_metrics["loss"] == 1.5 and rec.final_metrics["val_loss"] == "nan"
    assert rec.diverged and rec.diverged_at == "step 10: val_loss=nan" and res.diverged
    assert any("steps were counted" in n for n in rec.metric_notes)
    lines = (Path(res.run_dir) / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 4 and '"step":1,' in lines[0] and '"step":2,' in lines[1]
    # run.log and the exec path agree on the disk form of NaN
    assert '"val_loss":"nan"' in lines[2]


RANKED = r"""
import json
for r in (0, 1):
    print(f"[rank{r}]:" + json.dumps({"step": 1, "loss": 1.0 + r}))
print("[rank1]:" + json.dumps({"step": 2, "loss": 9.0}))
print("[rank0]:" + json.dumps({"step": 2, "loss": 0.5}))
print("[rank1]:" + json.dumps({"step": 3, "loss": 8.0}))
"""


def test_exec_tags_ranks_and_rank_0_owns_final(store: Path, tmp_path: Path) -> None:
    """Issue 14: under torchrun both ranks' lines went to one file and "final" was whichever printed last."""
    (tmp_path / "r.py").write_text(RANKED)
    res = execute(ExecRequest([PY, "r.py"], store=store, seed=0))
    rec = read_record(Path(res.run_dir))
    assert rec.final_metrics == {"step": 2, "loss": 0.5}
    assert rec.final_metrics_by_rank == {"1": {"step": 3, "loss": 8.0}}


def test_lost_run_keeps_final_metrics_from_disk_and_is_found_by_where(store: Path, tmp_path: Path) -> None:
    """Issue 14: a SIGKILLed (lost) run showed no final metrics and `--where metric.loss<0.5` left it out."""
    script = tmp_path / "k.py"
    script.write_text(
        "import time\nfrom expkit.runs import start\n"
        "run = start(config={}, seed=0, store='runs')\n"
        "run.log(1, loss=0.9)\nrun.log(2, loss=0.25)\ntime.sleep(1.5)\nprint('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([PY, str(script)], cwd=tmp_path, stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"ready"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(0.2)
    (row,) = list_runs(store, where=["metric.loss<0.5"]).runs
    assert row.status == "lost" and row.final_metrics == {"step": 2, "loss": 0.25}


def test_summarize_reads_rank_files_and_torn_lines(tmp_path: Path) -> None:
    (tmp_path / "metrics.jsonl").write_bytes(b'{"step":1,"loss":2.0}\n{"step":2,"loss":"inf"}\n{"step":3,"lo')
    (tmp_path / "metrics.rank1.jsonl").write_bytes(b'{"step":1,"loss":3.0}\n')
    s = summarize_metrics(tmp_path)
    assert s.final == {"step": 2, "loss": "inf"} and s.by_rank == {"1": {"step": 1, "loss": 3.0}}
    assert s.diverged_at == "step 2: loss=inf" and s.lines == 3


def test_exec_leaves_metrics_to_a_script_that_logs_itself(store: Path, tmp_path: Path) -> None:
    """A Trainer with ExpkitCallback under `runs exec` prints every log dict too: recorded once, at the
    trainer's step, not a second time with a counted step."""
    (tmp_path / "s.py").write_text(
        "from expkit.runs import start\nrun = start(config={'a': 1}, seed=0)\n"
        "run.log(5, loss=1.0)\nprint({'loss': '9.0', 'epoch': 1.0}, flush=True)\n"
        "run.finish()\n"
    )
    res = execute(ExecRequest([PY, "s.py"], store=store, seed=0))
    rows = (Path(res.run_dir) / "metrics.jsonl").read_text().splitlines()
    assert len(rows) == 1 and res.final_metrics == {"step": 5, "loss": 1.0}
    assert read_record(Path(res.run_dir)).config == {"a": 1}


HF_SCRIPT = r"""
import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(vocab_size=32, n_positions=8, n_embd=8, n_layer=1, n_head=2))
ids = torch.randint(0, 32, (8, 8))
args = TrainingArguments(output_dir="out", max_steps=3, per_device_train_batch_size=4, logging_steps=1,
                         report_to="none", use_cpu=True, disable_tqdm=True, save_strategy="no")
Trainer(model=model, args=args, train_dataset=[{"input_ids": r, "labels": r} for r in ids]).train()
"""


@pytest.mark.slow  # imports transformers in a child process: ~15-20 s on 2 cores
def test_exec_of_a_real_trainer_script_records_its_log_lines(store: Path, tmp_path: Path) -> None:
    """Issue 14: `runs exec -- python train_hf.py` recorded 0 metric lines (Trainer prints dict reprs)."""
    pytest.importorskip("transformers")
    (tmp_path / "train_hf.py").write_text(HF_SCRIPT)
    res = execute(ExecRequest([PY, "train_hf.py"], store=store, seed=0))
    assert res.status == "finished", (Path(res.run_dir) / "output.log").read_text()[-2000:]
    rows = [orjson.loads(x) for x in (Path(res.run_dir) / "metrics.jsonl").read_bytes().splitlines()]
    losses = [r for r in rows if "loss" in r]
    assert [r["step"] for r in losses] == [1, 2, 3] and all(isinstance(r["loss"], float) for r in losses)
    assert "train_loss" in res.final_metrics and "grad_norm" in res.final_metrics
