"""``expkit why`` end to end: a real crash's stderr, stdin, JSON, torchrun text, and bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SITE = "/venv/lib/python3.11/site-packages"

CRASH = """\
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 3)

    def forward(self, x):
        return self.proj(x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(16, 12)
        self.head = Head()

    def forward(self, x):
        return self.head(self.body(x))


Model()(torch.randn(2, 16))
"""


def test_why_reads_a_real_crash_log_and_marks_the_user_frame(cli, tmp_path):
    script = tmp_path / "crash.py"
    script.write_text(CRASH)
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    log = tmp_path / "crash.log"
    log.write_text("step 1 loss 2.0\n" + run.stderr)
    res = cli("why", str(log))
    assert res.exit_code == 0, res.stderr
    assert f">> {script}:11 in forward" in res.stdout  # self.proj(x) inside Head.forward
    assert "matmul shape mismatch: (2x12) @ (8x3)" in res.stdout
    assert "Module: self.proj -> nn.Linear" in res.stdout
    assert "framework frames (torch/nn/modules/module.py" in res.stdout


def test_why_json_from_stdin(cli):
    text = (
        "Traceback (most recent call last):\n"
        '  File "/me/train.py", line 40, in <module>\n    optimizer.step()\n'
        f'  File "{SITE}/torch/optim/adamw.py", line 200, in step\n    adamw(...)\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity "
        "of 23.65 GiB of which 100.00 MiB is free.\n"
    )
    res = cli("why", "--json", input=text)
    assert res.exit_code == 0
    data = json.loads(res.stdout)["result"]
    frames = data["traceback"]["exceptions"][0]["frames"]
    assert [f["kind"] for f in frames] == ["yours", "framework"]
    assert data["traceback"]["chosen_frame"]["line"] == 40
    oom = data["explanation"]["oom"]
    assert oom["phase"] == "optimizer step" and oom["requested_bytes"] == 512 * 2**20
    assert oom["capacity_bytes"] == round(23.65 * 2**30)


def test_why_torchrun_ranks(cli, tmp_path):
    body = (
        'Traceback (most recent call last):\n  File "/me/ddp.py", line 9, in <module>\n    loss.backward()\n'
        "RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn\n"
    )
    text = "".join(f"[rank{r}]: {line}\n" for r in (1, 0) for line in body.splitlines())
    log = tmp_path / "ranks.log"
    log.write_text(text)
    res = cli("why", str(log))
    assert res.exit_code == 0
    assert "rank 1 (failed ranks: 0, 1; ranks 0 failed the same way)" in res.stdout
    assert "backward on a tensor with no graph" in res.stdout


def test_why_cut_paste_is_best_effort(cli):
    res = cli(
        "why",
        input='Traceback (most recent call last):\n  File "/me/t.py", line 3, in <module>\n    main()\n'
        '  File "/me/t.py", line 7, in ma',
    )
    assert res.exit_code == 0
    assert "note: the traceback is cut before its exception line" in res.stdout
    # the last frame, cut inside its function name, still gives file and line
    assert ">> /me/t.py:7 in ma" in res.stdout and "(no exception line: the text is cut)" in res.stdout


def test_why_bad_input_exits_2_with_a_message(cli, tmp_path):
    res = cli("why", str(tmp_path / "missing.log"))
    assert res.exit_code == 2 and "missing.log: no such file" in res.stderr
    res = cli("why", str(tmp_path))
    assert res.exit_code == 2 and "is a directory" in res.stderr
    res = cli("why", input="all good, epoch 3 done\n")
    assert res.exit_code == 2 and "no Python traceback found in standard input" in res.stderr


def test_why_points_an_oom_to_the_ledger_and_that_command_works(cli, tmp_path):
    text = (
        "Traceback (most recent call last):\n"
        '  File "/me/train.py", line 40, in <module>\n    optimizer.step()\n'
        f'  File "{SITE}/torch/optim/adamw.py", line 200, in step\n    adamw(...)\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total capacity "
        "of 23.65 GiB of which 100.00 MiB is free.\n"
    )
    log = tmp_path / "crash.log"
    log.write_text(text)
    res = cli("why", str(log))
    assert res.exit_code == 0
    assert f"--oom {log}" in res.stdout
    res = cli("mem", "qwen2.5-1.5b", "--seq", "4096", "--gpu", "4090", "--oom", str(log), "--json")
    # the run that went OOM does not fit: mem says so with exit 1 (a check that ran and failed) and still
    # writes the ranked remedies
    assert res.exit_code == 1 and "does not fit on RTX 4090" in res.stderr, res.stderr
    oom = json.loads(res.stdout)["result"]["oom"]
    assert oom["phase"] == "optimizer step" and oom["remedies"]


# --- real logs (issue 14): prefixes, colours, escape sequences, collators, the Trainer, NCCL ---------------

FIXTURES = Path(__file__).parents[1] / "diagnose" / "fixtures"


@pytest.mark.parametrize("name", ["hf_trainer_collate", "nccl_watchdog_torchrun", "nccl_k8s_no_traceback"])
def test_why_golden_reports_of_real_log_shapes(cli, name):
    # the .report.txt files were written by this command and read line by line before being kept
    res = cli("why", str(FIXTURES / f"{name}.log"))
    assert res.exit_code == 0, res.stderr
    assert res.stdout == (FIXTURES / f"{name}.report.txt").read_text()
    assert "\x1b" not in res.stdout and "\x07" not in res.stdout


def test_why_never_echoes_control_sequences_from_the_log(cli):
    text = (
        'Traceback (most recent call last):\n  File "/me/t.py", line 3, in <module>\n    f()\n'
        "ValueError: bad \x1b]0;owned\x07value\x1b[2J\x07 \x08here\n"
    )
    res = cli("why", input=text)
    assert res.exit_code == 0, res.stderr
    assert not any(ch in res.stdout for ch in "\x1b\x07\x08\x9b")
    assert "ValueError: bad value here" in res.stdout


def test_why_nccl_timeout_without_traceback_json(cli):
    res = cli("why", str(FIXTURES / "nccl_k8s_no_traceback.log"), "--json")
    assert res.exit_code == 0, res.stderr
    e = json.loads(res.stdout)["result"]["explanation"]
    assert e["kind"] == "nccl_timeout" and e["nccl"]["silent_ranks"] == [3]
    assert [r["seq_num"] for r in e["nccl"]["reports"]] == [1204, 1203, 1204]


def test_why_reads_a_real_hugging_face_trainer_collate_crash(cli, tmp_path):
    # a real tiny Trainer run (GPT-2 config, random weights, CPU) whose examples differ in length and whose
    # default collator cannot stack them; the log is what logging.exception and the interpreter print
    script = tmp_path / "train_hf.py"
    script.write_text(
        textwrap.dedent("""
        import logging, sys
        import torch
        from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments

        logging.basicConfig(format="%(asctime)s - %(name)s - %(levelname)s - %(message)s", level=logging.INFO)
        model = GPT2LMHeadModel(GPT2Config(vocab_size=50, n_positions=32, n_embd=8, n_layer=1, n_head=2))
        data = [{"input_ids": torch.arange(n) % 50, "labels": torch.arange(n) % 50} for n in (12, 9, 7, 12)]
        args = TrainingArguments(output_dir=sys.argv[1], per_device_train_batch_size=2, max_steps=2, report_to=[],
                                 use_cpu=True, save_strategy="no", logging_strategy="no", disable_tqdm=True)
        try:
            Trainer(model=model, args=args, train_dataset=data).train()
        except Exception:
            logging.exception("training failed")
            raise
    """)
    )
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert proc.returncode != 0 and "stack expects each tensor to be equal size" in proc.stderr
    res = cli("why", "--json", input=proc.stderr)
    assert res.exit_code == 0, res.stderr
    e = json.loads(res.stdout)["result"]["explanation"]
    assert e["kind"] == "collate_size_mismatch" and len(e["shapes"]) == 2
    assert e["frame"]["file"] == str(script) and "DataCollatorWithPadding" in " ".join(e["fixes"])
    assert e["trainer"].startswith("train -> _inner_training_loop") and "fetching a batch" in e["trainer"]


def test_why_reads_a_non_utf8_log_from_stdin(cli):
    text = (
        'Traceback (most recent call last):\n  File "/me/t.py", line 3, in <module>\n    f()\n'
        "ValueError: caf\u00e9 not found\n"
    ).encode("latin-1")
    res = cli("why", input=text)
    assert res.exit_code == 0, res.stderr
    assert "ValueError: caf\ufffd not found" in res.stdout
