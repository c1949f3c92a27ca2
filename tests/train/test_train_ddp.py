"""DDP through torchrun: 2 CPU processes (gloo) follow the loss curve of one process with the same
global batch, and rank 0 alone writes the run record."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from train_fixtures import TINY_MODEL, tiny_train

from expkit.train import TrainRequest, train_charlm

OVERRIDES = [
    "n_layer=1",
    "n_embd=32",
    "n_head=2",
    "block_size=32",
    "seq_len=32",
    "warmup_steps=2",
    "max_steps=6",
    "eval_windows=8",
    "log_interval=1",
    "eval_interval=1000",
]


@pytest.mark.slow
def test_two_process_ddp_matches_one_process_with_the_same_global_batch(small_corpus_path, small_corpus, tmp_path):
    torchrun = Path(sys.executable).parent / "torchrun"
    cmd = [
        str(torchrun),
        "--standalone",
        "--nproc-per-node",
        "2",
        "-m",
        "expkit",
        "train",
        "charlm",
        "--corpus",
        str(small_corpus_path),
        "--store",
        str(tmp_path / "runs"),
        "--json",
        *[a for o in [*OVERRIDES, "batch_size=2"] for a in ("--config", o)],
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    # own session: on a timeout the whole group (torchrun and both workers) is killed, no orphans
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path, start_new_session=True
    )
    try:
        stdout, stderr = proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    assert proc.returncode == 0, stderr[-3000:]
    ddp = json.loads(stdout[stdout.index("{") :])["result"]
    assert ddp["world_size"] == 2 and ddp["tokens"] == 6 * 2 * 2 * 32

    single = train_charlm(
        TrainRequest(model_config=TINY_MODEL, train_config=tiny_train(batch_size=4), corpus=small_corpus, record=False)
    )
    ddp_losses = [loss for _, loss in ddp["losses"]]
    one_losses = [loss for _, loss in single.losses]
    # same rows, same init; only the order of float32 sums differs (gloo all-reduce vs one batch mean)
    assert ddp_losses == pytest.approx(one_losses, rel=1e-4, abs=1e-5)
    assert ddp["final_val_loss"] == pytest.approx(single.final_val_loss, rel=1e-4)

    runs = [p for p in (tmp_path / "runs").iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert len(runs) == 1  # one record, owned by rank 0
    rec = json.loads((runs[0] / "run.json").read_text())
    assert rec["world_size"] == 2 and rec["status"] == "finished"
