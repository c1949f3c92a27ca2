"""``expkit mem``: exit codes and content, JSON fields, bad input."""

from __future__ import annotations

import json

import pytest


def test_lora_ledger_json_has_the_issue_fields(cli):
    res = cli("mem", "qwen2.5-0.5b", "--method", "lora", "--lora-r", "16", "--seq", "512", "--json")
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)["result"]
    assert out["total_params"] == 494_032_768 and out["trainable_params"] == 8_798_208
    assert out["trainable_fraction"] == pytest.approx(0.0178, abs=1e-4)
    names = [line["name"] for line in out["lines"]]
    for expected in (
        "fp32 master weights",
        "bf16 weights",
        "gradients",
        "Adam m",
        "Adam v",
        "activations",
        "logits / loss",
        "temporaries",
        "runtime overhead",
    ):
        assert expected in names
    assert out["per_gpu_bytes"] == sum(line["bytes"] for line in out["lines"])
    assert out["fits"] is None
    assert out["parameters"]["trainable_fraction_of_all"] == pytest.approx(0.01750, abs=1e-5)


def test_table_and_fits_verdict(cli):
    res = cli("mem", "llama-2-7b", "--seq", "4096", "--gpus", "8", "--shard", "fsdp", "--gpu", "a100-80gb")
    assert res.exit_code == 0, res.stderr
    assert "Adam m" in res.stdout and "predicted peak per GPU" in res.stdout
    assert "A100 80GB SXM" in res.stdout and ("fits" in res.stdout)


def test_explain_shows_every_convention(cli):
    res = cli("mem", "qwen2.5-0.5b", "--explain")
    assert res.exit_code == 0, res.stderr
    for conv in ("zero", "hf", "deepspeed", "accelerate", "why they differ"):
        assert conv in res.stdout


def test_inference_mode(cli):
    res = cli("mem", "llama-3-8b", "--mode", "infer", "--context", "8192", "--json")
    assert res.exit_code == 0, res.stderr
    kv = next(line for line in json.loads(res.stdout)["result"]["lines"] if line["name"] == "KV cache")
    assert kv["bytes"] == 2**30


def test_inference_prefill_terms_and_prompt(cli):
    args = ("mem", "qwen2.5-7b", "--mode", "infer", "--context", "32769")
    long = json.loads(cli(*args, "--prompt", "30720", "--json").stdout)["result"]
    short = json.loads(cli(*args, "--prompt", "1", "--json").stdout)["result"]
    assert long["peak_phase"] == "prefill of 30,720 prompt tokens" and short["peak_phase"] == "decode at full context"
    assert long["peak_bytes"] > short["peak_bytes"]
    text = cli(*args, "--prompt", "30720").stdout.replace("\n", " ")
    assert "prefill: largest intermediate" in text and "assumed: prefill logits" in text
    res = cli(*args, "--prompt", "40000")
    assert res.exit_code == 2 and "--prompt 40000 is longer than context 32769" in res.stderr


def test_config_json_path(cli, tmp_path):
    cfg = {
        "model_type": "llama",
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 128,
        "vocab_size": 100,
    }
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    res = cli("mem", str(tmp_path), "--seq", "64", "--json")
    assert res.exit_code == 0, res.stderr
    # embed 6400 + 2 * (4 * 4096 + 3 * 8192 + 128) + 64 + head 6400
    assert json.loads(res.stdout)["result"]["total_params"] == 6400 + 2 * (4 * 4096 + 3 * 8192 + 128) + 64 + 6400


def test_oom_traceback_is_reconciled(cli, tmp_path):
    tb = tmp_path / "crash.log"
    tb.write_text(
        "Traceback (most recent call last):\n"
        '  File "/home/me/train.py", line 88, in <module>\n'
        "    loss.backward()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.16 GiB. GPU 0 has a total capacity of "
        "23.64 GiB of which 301.56 MiB is free. Including non-PyTorch memory, this process has 23.33 GiB memory "
        "in use. Of the allocated memory 22.71 GiB is allocated by PyTorch, and 170.23 MiB is reserved by PyTorch "
        "but unallocated.\n"
    )
    res = cli("mem", "qwen2.5-1.5b", "--seq", "4096", "--oom", str(tb), "--json")
    assert res.exit_code == 0, res.stderr
    oom = json.loads(res.stdout)["result"]["oom"]
    assert oom["phase"] == "backward" and oom["remedies"]
    assert oom["remedies"][0]["savings_bytes"] >= oom["remedies"][-1]["savings_bytes"]


@pytest.mark.parametrize(
    "args, match",
    [
        (["--gpus", "0"], "--gpus must be a positive integer"),
        (["--method", "dora"], "--method 'dora'"),
        (["--method", "lora", "--lora-targets", "qkv"], "'qkv' matches no module.*q_proj"),
    ],
)
def test_bad_options_exit_2_with_one_line(cli, args, match):
    import re

    res = cli("mem", "qwen2.5-0.5b", *args)
    assert res.exit_code == 2
    assert re.search(match, res.stderr) and "Traceback" not in res.stderr


def test_bad_config_names_file_and_key(cli, tmp_path):
    (tmp_path / "config.json").write_text('{"num_hidden_layers": 2}')
    res = cli("mem", str(tmp_path / "config.json"))
    assert res.exit_code == 2 and "config.json" in res.stderr and "hidden_size" in res.stderr


def test_unknown_name_lists_catalog(cli):
    res = cli("mem", "gpt-17")
    assert res.exit_code == 2 and "qwen2.5-7b" in res.stderr


def test_measure_on_a_tiny_config_uses_the_cache(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("EXPKIT_CACHE", str(tmp_path / "cache"))
    cfg = {
        "model_type": "qwen2",
        "hidden_size": 64,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 128,
        "vocab_size": 256,
    }
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    args = ("mem", str(tmp_path), "--seq", "128", "--precision", "fp32", "--measure", "--replica-seq", "32", "--json")
    res = cli(*args)
    assert res.exit_code == 0, res.stderr
    fit = json.loads(res.stdout)["result"]["measured"]
    assert fit["layers"] == [1, 2, 4] and fit["cached"] is False
    assert abs(fit["extrapolated_bytes"] / fit["formula_bytes"] - 1) < 0.01
    assert json.loads(cli(*args).stdout)["result"]["measured"]["cached"] is True
    assert list((tmp_path / "cache" / "memory").glob("*.json"))


# issue 13 and issue 15 regressions


def test_does_not_fit_is_exit_1_with_the_ledger_printed(cli):
    res = cli("mem", "llama-2-7b", "--seq", "4096", "--gpu", "4090")
    assert res.exit_code == 1
    assert "does NOT fit" in res.stdout and "does not fit on RTX 4090" in res.stderr
    js = cli("mem", "llama-2-7b", "--seq", "4096", "--gpu", "4090", "--json")
    assert js.exit_code == 1 and json.loads(js.stdout)["result"]["fits"] is False


def test_ambiguous_gpu_asks_which(cli):
    res = cli("mem", "qwen2.5-0.5b", "--gpu", "a100")
    assert res.exit_code == 2 and "A100 40GB SXM, A100 80GB SXM, A100 80GB PCIe" in res.stderr


def test_moe_json_has_total_active_and_approximations(cli):
    res = cli("mem", "deepseek-v3", "--mode", "infer", "--context", "8192", "--json")
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)["result"]
    assert out["total_params"] == 671_026_404_352
    assert out["active_params"] == 36_625_603_584  # without the input embedding (the stated convention)
    kv = next(line for line in out["lines"] if line["name"] == "KV cache")
    assert kv["bytes"] == 61 * 576 * 8192 * 2  # MLA latent + rope key
    assert any("num_nextn_predict_layers" in a for a in out["approximations"])
    text = cli("mem", "deepseek-v3", "--mode", "infer", "--context", "8192").stdout.replace("\n", " ")
    assert "approximation: num_nextn_predict_layers" in text


def test_235b_moe_lora_ledger_answers_in_under_30_s(cli):

    from timebound import assert_within, timed

    # the reference: a dense model's ledger, same command; the MoE one took minutes before (one expert at a time)
    _, reference = timed(lambda: cli("mem", "qwen2.5-0.5b", "--method", "lora", "--seq", "4096", "--json"))
    res, elapsed = timed(lambda: cli("mem", "qwen3-235b-a22b", "--method", "lora", "--seq", "4096", "--json"))
    assert res.exit_code == 0, res.stderr
    assert_within(elapsed, reference, factor=20.0, floor_s=10.0)
    out = json.loads(res.stdout)["result"]
    assert out["parameters"]["adapter_params"] == out["trainable_params"] > 0


def test_uncached_hub_id_is_exit_2_with_the_fetch_command(cli, tmp_path, monkeypatch):
    import huggingface_hub.constants as hfc

    monkeypatch.setattr(hfc, "HF_HUB_CACHE", str(tmp_path))
    res = cli("mem", "acme/unknown-model")
    assert res.exit_code == 2 and "hf download acme/unknown-model config.json" in res.stderr


def test_config_with_hidden_not_divisible_by_heads_is_exit_2(cli, tmp_path):
    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "model_type": "llama",
                "hidden_size": 100,
                "num_hidden_layers": 2,
                "num_attention_heads": 3,
                "vocab_size": 10,
            }
        )
    )
    res = cli("mem", str(tmp_path))
    assert res.exit_code == 2 and "hidden_size 100 is not divisible by num_attention_heads 3" in res.stderr


def test_huge_config_is_exit_2(cli, tmp_path):
    (tmp_path / "config.json").write_text('{"x": "' + "a" * (5 * 2**20) + '"}')
    res = cli("mem", str(tmp_path))
    assert res.exit_code == 2 and "too large for a config.json" in res.stderr


def test_measure_refuses_a_model_with_several_layer_kinds(cli):
    res = cli("mem", "deepseek-v3", "--measure")
    assert res.exit_code == 2 and "2 layer kinds" in res.stderr


# --- --oom reads through the library's bounded reader (issue 21: /dev/zero was a MemoryError traceback) ------

_OOM_TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/home/me/train.py", line 88, in <module>\n'
    "    loss.backward()\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.16 GiB. GPU 0 has a total capacity of "
    "23.64 GiB of which 301.56 MiB is free.\n"
)


def test_oom_from_dev_zero_is_one_line_exit_2_in_a_real_process():
    import subprocess
    import sys

    res = subprocess.run(
        [sys.executable, "-m", "expkit", "mem", "qwen2.5-1.5b", "--oom", "/dev/zero"],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    assert res.returncode == 2, res.stderr[-2000:]
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: /dev/zero: more than 512 MiB of text"), res.stderr[-2000:]


def test_oom_from_a_fifo_is_read_like_a_file(tmp_path):
    # process substitution (`--oom <(kubectl logs ...)`) hands a pipe: it is read to its end, not refused
    import os
    import subprocess
    import sys
    import threading

    fifo = tmp_path / "crash.fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "w") as f:
            f.write(_OOM_TRACEBACK)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    res = subprocess.run(
        [sys.executable, "-m", "expkit", "mem", "qwen2.5-1.5b", "--seq", "4096", "--oom", str(fifo), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    writer.join(timeout=10)
    assert res.returncode == 0, res.stderr[-2000:]
    assert json.loads(res.stdout)["result"]["oom"]["phase"] == "backward"


def test_oom_file_without_a_traceback_names_it(cli, tmp_path):
    log = tmp_path / "train.log"
    log.write_text("step 1 loss 2.3\nstep 2 loss 2.1\n")
    res = cli("mem", "qwen2.5-1.5b", "--oom", str(log))
    assert res.exit_code == 2 and "no Python traceback found in" in res.stderr and "train.log" in res.stderr
