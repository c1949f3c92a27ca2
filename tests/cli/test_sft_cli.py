"""``expkit sft``: audit, train, check-stop, params, data, demo-model, exit codes and messages."""

from __future__ import annotations

import json
import warnings

import pytest

warnings.filterwarnings("ignore", category=FutureWarning)


@pytest.fixture(scope="module")
def demo_dir():
    from expkit.finetune.demomodel import ensure_demo_model

    return str(ensure_demo_model(quick=True).path)


@pytest.fixture
def data_file(tmp_path, cli):
    path = tmp_path / "train.jsonl"
    res = cli("sft", "data", "--out", str(path), "-n", "24", "--seed", "2")
    assert res.exit_code == 0 and "wrote 24 conversations" in res.stdout
    return str(path)


def test_audit_passes_and_reports_masked_fraction(cli, demo_dir, data_file, tmp_path):
    html = tmp_path / "audit.html"
    res = cli("sft", "audit", "--model", demo_dir, "--data", data_file, "--show", "1", "--html", str(html))
    assert res.exit_code == 0, res.stderr
    assert "24 examples" in res.stdout and "end of turn: <|im_end|>" in res.stdout
    assert "<|im_start|>" in res.stdout and "[<|im_end|>]" in res.stdout  # trained tokens bracketed in a pipe
    assert 'class="t"' in html.read_text() and "&lt;|im_end|&gt;" in html.read_text()
    res = cli("sft", "audit", "--model", demo_dir, "--data", data_file, "--json", "--show", "0")
    audit = json.loads(res.stdout)["result"]["audit"]
    assert 0.5 < audit["masked_fraction"] < 1 and audit["problems"] == []


def test_audit_fails_with_exit_1_when_the_stop_token_is_masked(cli, demo_dir, data_file):
    res = cli("sft", "audit", "--model", demo_dir, "--data", data_file, "--no-eos-in-loss")
    assert res.exit_code == 1
    assert "FAIL stop_token_not_trained: example 0 (line 1)" in res.stdout
    assert "24 problems" in res.stderr


def test_bad_data_is_exit_2_with_the_line(cli, demo_dir, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}\n'
        '{"messages": [{"role": "user", "content": "no answer"}]}\n'
    )
    res = cli("sft", "audit", "--model", demo_dir, "--data", str(bad))
    assert res.exit_code == 2 and "bad.jsonl:2: conversation has no assistant turn" in res.stderr
    res = cli("sft", "audit", "--model", demo_dir, "--data", str(bad), "--on-error", "skip")
    assert res.exit_code == 0 and "(1 lines skipped)" in res.stdout


def test_train_then_check_stop(cli, demo_dir, data_file, tmp_path):
    out = tmp_path / "out"
    res = cli(
        "sft",
        "--model",
        demo_dir,
        "--data",
        data_file,
        "--steps",
        "2",
        "--batch-size",
        "4",
        "--lora-r",
        "4",
        "--out",
        str(out),
        "--store",
        str(tmp_path / "runs"),
        "--threads",
        "1",
        "--json",
    )
    assert res.exit_code == 0, res.stderr
    result = json.loads(res.stdout)["result"]
    assert result["steps"] == 2 and len(result["losses"]) == 2 and result["contract"]["ok"]
    assert result["run_id"] and (tmp_path / "runs").is_dir()
    assert result["skipped_lines"] == {}  # the SFT result carries its skipped lines (issue 20)
    held = tmp_path / "held.jsonl"
    cli("sft", "data", "--out", str(held), "-n", "3", "--seed", "9")
    res = cli(
        "sft",
        "check-stop",
        "--model",
        demo_dir,
        "--adapter",
        str(out / "adapter"),
        "--data",
        str(held),
        "-n",
        "3",
        "--max-new-tokens",
        "4",
        "--min-stop-rate",
        "1.01",
    )
    assert res.exit_code == 2 and "--min-stop-rate must be in [0, 1]" in res.stderr
    res = cli(
        "sft",
        "check-stop",
        "--model",
        demo_dir,
        "--data",
        str(held),
        "-n",
        "3",
        "--max-new-tokens",
        "3",
        "--min-stop-rate",
        "1.0",
        "--threads",
        "1",
    )
    # the base model was never taught <|im_end|> after an answer: it does not stop within 3 tokens
    assert res.exit_code == 1 and "stop rate" in res.stdout and "below --min-stop-rate" in res.stderr
    assert "does NOT include <|im_end|>" in res.stdout


def test_bad_training_arguments(cli, demo_dir, data_file, tmp_path):
    res = cli("sft", "--model", demo_dir, "--data", data_file, "--steps", "0")
    assert res.exit_code == 2 and "--steps must be >= 1, not 0" in res.stderr
    res = cli(
        "sft",
        "--model",
        demo_dir,
        "--data",
        data_file,
        "--steps",
        "1",
        "--targets",
        "attn",
        "--no-record",
        "--out",
        str(tmp_path / "o"),
    )
    assert res.exit_code == 2 and "attn match no module" in res.stderr and "q_proj" in res.stderr
    res = cli("sft", "--model", str(tmp_path), "--data", data_file)
    assert res.exit_code == 2 and "no tokenizer" in res.stderr
    res = cli("sft", "--data", data_file)
    assert res.exit_code == 2 and "needs --model" in res.stderr


def test_params_uses_the_memory_ledger_count(cli, demo_dir):
    res = cli("sft", "params", demo_dir, "--lora-r", "4", "--json")
    assert res.exit_code == 0, res.stderr
    counts = json.loads(res.stdout)["result"]
    from transformers import AutoModelForCausalLM

    base = sum(p.numel() for p in AutoModelForCausalLM.from_pretrained(demo_dir).parameters())
    assert counts["total_params"] == base
    assert 0 < counts["trainable_params"] < base
    res = cli("sft", "params", "qwen2.5-0.5b", "--lora-r", "16")
    assert res.exit_code == 0 and "494,032,768" in res.stdout and "1.78%" in res.stdout


def test_demo_model_command_copies_the_cache(cli, tmp_path):
    res = cli("sft", "demo-model", "--quick", "--out", str(tmp_path / "demo"))
    assert res.exit_code == 0 and "from the cache" in res.stdout
    assert (tmp_path / "demo" / "tokenizer.json").is_file() and (tmp_path / "demo" / "config.json").is_file()


def test_data_writes_checkable_conversations(cli, tmp_path):
    import json

    out = tmp_path / "chat.jsonl"
    res = cli("sft", "data", "--out", str(out), "-n", "7", "--seed", "3", "--no-system", "--json")
    assert res.exit_code == 0, res.stderr
    info = json.loads(res.stdout)["result"]
    assert info["conversations"] == 7 and info["system_turn"] is False and info["path"] == str(out)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 7
    assert all([m["role"] for m in r["messages"]] == ["user", "assistant"] for r in rows)


@pytest.mark.slow  # 12 commands that load the demo model: ~75 s on 2 loaded cores
def test_audit_and_check_stop_json_parse_strictly_for_any_chat_text(cli, demo_dir, tmp_path):
    """Issue 35 item 5 for sft: generated chat text (control characters, escapes, lone surrogates, which the reader
    refuses with exit 2 in an error envelope) goes into the --json of sft audit and sft check-stop; every output
    parses with a strict parser. Generated with hypothesis, derandomized (the same cases each run)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    hostile = ["\x7f", "\x1b]0;t\x07", "\x9b31m", "\x00", "\ud800", "\u2028", "\x85", '"\\', "😀"]
    text = st.lists(st.one_of(st.characters(exclude_categories=()), st.sampled_from(hostile)), min_size=1, max_size=20)
    seen = {"ok": 0, "refused": 0}

    @settings(
        max_examples=6,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(user=text.map("".join), answer=text.map("".join))
    def run(user: str, answer: str) -> None:
        data = tmp_path / "d.jsonl"
        msgs = [{"role": "user", "content": "q " + user}, {"role": "assistant", "content": "a " + answer}]
        data.write_text(json.dumps({"messages": msgs}) + "\n", encoding="utf-8")
        for args in (("audit", "--show", "1"), ("check-stop", "-n", "1", "--max-new-tokens", "3", "--threads", "1")):
            res = cli("sft", *args, "--model", demo_dir, "--data", str(data), "--json")
            out = json.loads(res.stdout, strict=True)  # the envelope, or the error envelope on exit 2
            assert res.exit_code in (0, 1, 2) and out["command"].startswith("sft"), res.stdout
            assert not any(0x7F <= ord(c) <= 0x9F for c in res.stdout)
            seen["ok" if res.exit_code != 2 else "refused"] += 1

    run()
    assert seen["ok"] and seen["refused"]  # both texts that train and texts the reader refuses were drawn
