"""``expkit train charlm`` in-process: the sanity report and PPL lines, --json fields, exit codes."""

from __future__ import annotations

import json
import math

TINY = [
    "--config",
    "n_layer=1",
    "--config",
    "n_embd=32",
    "--config",
    "n_head=2",
    "--config",
    "block_size=32",
    "--config",
    "seq_len=32",
    "--config",
    "batch_size=4",
    "--config",
    "max_steps=4",
    "--config",
    "warmup_steps=1",
    "--config",
    "eval_windows=8",
]


def _corpus(tmp_path):
    f = tmp_path / "text.txt"
    f.write_text("the quick brown fox jumps over the lazy dog\n" * 300)
    return f


def test_train_charlm_prints_sanity_report_and_ppl(cli, tmp_path):
    res = cli("train", "charlm", "--corpus", str(_corpus(tmp_path)), "--store", str(tmp_path / "runs"), *TINY)
    assert res.exit_code == 0, res.stderr
    assert "first loss" in res.stdout and "vs ln 128 = 4.852" in res.stdout
    assert "params_without_grad: ok" in res.stdout and "stale_grads: ok" in res.stdout
    assert "lr schedule (drawn before step 1)" in res.stdout
    assert "val PPL" in res.stdout and "-> " in res.stdout and "4 steps" in res.stdout


def test_train_charlm_json_has_the_documented_fields(cli, tmp_path):
    res = cli("train", "charlm", "--corpus", str(_corpus(tmp_path)), "--store", str(tmp_path / "runs"), "--json", *TINY)
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)["result"]
    for key in ("params", "first_loss", "ln_vocab", "final_val_loss", "final_val_ppl", "tokens_per_s", "run_id"):
        assert key in out
    assert out["params"] == 17_600  # 1 x (12 x 32^2 + 4 x 32) + 128 x 32 + 32 x 32 + 2 x 32
    assert out["ln_vocab"] == math.log(128)
    assert out["final_val_ppl"] == math.exp(out["final_val_loss"])
    assert (tmp_path / "runs" / out["run_id"] / "run.json").is_file()


def test_unknown_config_key_exits_2_with_the_closest_key(cli, tmp_path):
    res = cli("train", "charlm", "--corpus", str(_corpus(tmp_path)), "--config", "learning_rate=1e-3")
    assert res.exit_code == 2
    assert "learning_rate: no such config key" in res.stderr and "did you mean 'lr_max'?" in res.stderr


def test_config_errors_name_the_flag(cli, tmp_path):
    res = cli("train", "charlm", "--corpus", str(_corpus(tmp_path)), "--config", "lr_max=abc")
    assert res.exit_code == 2 and "--config lr_max=abc: not float" in res.stderr
    res = cli("train", "charlm", "--corpus", str(_corpus(tmp_path)), "--config", "lr_max")
    assert res.exit_code == 2 and "--config 'lr_max' is not KEY=VALUE" in res.stderr
    assert "e.g. --config lr_max=1e-3" in res.stderr


def test_empty_corpus_exits_2(cli, tmp_path):
    f = tmp_path / "empty.txt"
    f.write_text("")
    res = cli("train", "charlm", "--corpus", str(f), "--store", str(tmp_path / "runs"), *TINY)
    assert res.exit_code == 2 and "no ASCII text" in res.stderr


def test_nan_guard_exits_1_naming_the_module(cli, tmp_path):
    # lr 1e6 without clipping makes the weights non-finite within a few steps
    res = cli(
        "train",
        "charlm",
        "--corpus",
        str(_corpus(tmp_path)),
        "--store",
        str(tmp_path / "runs"),
        *TINY,
        "--config",
        "lr_max=1e6",
        "--config",
        "grad_clip=1e9",
        "--config",
        "max_steps=30",
    )
    assert res.exit_code == 1
    assert "produced the first" in res.stderr
