"""Issue 15's defects, one named test each: every one used to end in a traceback (exit 1, later 3), a
silent exit with the user's code, or ran code it should not have. Each now exits 2 with one line that
names the value or the file."""

from __future__ import annotations

import json
import os
import pickle
import sys

import pytest

TINY = [
    "--config",
    "n_layer=1",
    "--config",
    "block_size=32",
    "--config",
    "seq_len=32",
    "--config",
    "batch_size=4",
    "--config",
    "max_steps=2",
    "--config",
    "warmup_steps=1",
    "--config",
    "eval_windows=2",
]


def _one_line_error(res, code=2):
    """Exit ``code``, no traceback, and exactly one ``error:`` line on stderr."""
    assert res.exit_code == code, (res.exit_code, res.stdout, res.stderr)
    assert "Traceback" not in res.stdout + res.stderr
    assert sum(line.startswith("error: ") for line in res.stderr.splitlines()) == 1, res.stderr
    return res.stderr


def _corpus(tmp_path):
    f = tmp_path / "text.txt"
    f.write_text("the quick brown fox jumps over the lazy dog\n" * 200)
    return f


# ---- expkit profile: code runs only after an explicit '--' ------------------------------------------


def test_profile_does_not_run_a_bare_python_file(cli, tmp_path):
    marker = tmp_path / "ran.txt"
    script = tmp_path / "evil.py"
    script.write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    err = _one_line_error(cli("profile", str(script)))
    assert "expkit runs code only after '--'" in err and f"expkit profile -- python {script}" in err
    assert not marker.exists()


def test_profile_without_dashes_does_not_run_a_command_either(cli, tmp_path):
    marker = tmp_path / "ran.txt"
    script = tmp_path / "evil.py"
    script.write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    err = _one_line_error(cli("profile", "python", str(script)))
    assert "after '--'" in err
    assert not marker.exists()


def test_profile_with_dashes_still_runs_the_script(cli, tmp_path):
    marker = tmp_path / "ran.txt"
    script = tmp_path / "ok.py"
    script.write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    res = cli("profile", "--out", str(tmp_path / "t.json"), "--", "python", str(script))
    assert res.exit_code == 0, res.stderr
    assert marker.read_text() == "ran"


# ---- expkit train charlm: the whole config is validated after every override ---------------------


def test_train_config_order_of_overrides_does_not_matter():
    from expkit.train import CharLMConfig, TrainConfig, apply_overrides

    a = apply_overrides(["n_embd=6", "n_head=2"], CharLMConfig(), TrainConfig())[0]
    b = apply_overrides(["n_head=2", "n_embd=6"], CharLMConfig(), TrainConfig())[0]
    assert (a.n_embd, a.n_head) == (b.n_embd, b.n_head) == (6, 2)


def test_train_charlm_n_embd_before_n_head_trains(cli, tmp_path):
    res = cli(
        "train",
        "charlm",
        "--corpus",
        str(_corpus(tmp_path)),
        "--store",
        str(tmp_path / "runs"),
        "--json",
        "--config",
        "n_embd=6",
        "--config",
        "n_head=2",
        *TINY,
    )
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["result"]["steps"] == 2


def test_train_charlm_still_refuses_an_indivisible_final_config(cli, tmp_path):
    err = _one_line_error(cli("train", "charlm", "--config", "n_embd=6", "--config", "n_head=4"))
    assert "n_embd=6 is not divisible by n_head=4" in err


@pytest.mark.parametrize("minutes", ["nan", "inf", "-1", "0"])
def test_train_charlm_minutes_must_be_finite_and_positive(cli, tmp_path, minutes):
    err = _one_line_error(
        cli(
            "train",
            "charlm",
            "--corpus",
            str(_corpus(tmp_path)),
            "--minutes",
            minutes,
            "--store",
            str(tmp_path / "runs"),
        )
    )
    assert f"minutes={float(minutes)}" in err


def test_train_charlm_vocab_smaller_than_ascii_is_refused(cli, tmp_path):
    err = _one_line_error(
        cli(
            "train",
            "charlm",
            "--corpus",
            str(_corpus(tmp_path)),
            "--store",
            str(tmp_path / "runs"),
            "--config",
            "vocab_size=10",
            *TINY,
        )
    )
    assert "vocab_size=10" in err and "128" in err


@pytest.mark.parametrize(
    "item, says",
    [
        ("max_steps=1e20", "outside the 64-bit integer range"),
        ("lr_max=nan", "not a finite number"),
        ("grad_clip=inf", "not a finite number"),
        ("max_steps=" + "9" * 5000, "not an integer"),
    ],
)
def test_train_charlm_config_values_out_of_range(cli, item, says):
    err = _one_line_error(cli("train", "charlm", "--config", item))
    assert item.split("=")[0] in err and says in err


def test_train_charlm_huge_seed_is_refused(cli, tmp_path):
    err = _one_line_error(
        cli(
            "train",
            "charlm",
            "--corpus",
            str(_corpus(tmp_path)),
            "--seed",
            "9" * 30,
            "--store",
            str(tmp_path / "runs"),
            *TINY,
        )
    )
    assert "seed=" + "9" * 30 in err


def _checkpoint(cli, tmp_path):
    """A real checkpoint of a 2-step run (its manifest is then rewritten to match a tampered state)."""
    res = cli(
        "train",
        "charlm",
        "--corpus",
        str(_corpus(tmp_path)),
        "--store",
        str(tmp_path / "runs"),
        "--json",
        "--config",
        "checkpoint_interval=2",
        *TINY,
    )
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)["result"]
    return out["checkpoint"]


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def _retarget_manifest(ckpt_dir):
    """Make the manifest agree with the tampered files: the sha256 check alone must not be the defence."""
    import hashlib
    from pathlib import Path

    manifest_path = Path(ckpt_dir) / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    for name in manifest["files"]:
        data = (Path(ckpt_dir) / name).read_bytes()
        manifest["files"][name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    manifest_path.write_text(json.dumps(manifest))


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_resume_with_a_malicious_pickle_is_refused_in_one_line(cli, tmp_path):
    from pathlib import Path

    ckpt = Path(_checkpoint(cli, tmp_path))
    (ckpt / "state.pt").write_bytes(pickle.dumps(_Evil()))
    _retarget_manifest(ckpt)
    res = cli(
        "train",
        "charlm",
        "--corpus",
        str(_corpus(tmp_path)),
        "--store",
        str(tmp_path / "runs"),
        "--resume",
        str(ckpt),
        *[a.replace("max_steps=2", "max_steps=4") for a in TINY],
    )
    err = _one_line_error(res)
    assert "state.pt" in err and "refused to load" in err


def test_resume_with_random_weights_names_the_file(cli, tmp_path):
    from pathlib import Path

    ckpt = Path(_checkpoint(cli, tmp_path))
    (ckpt / "tensors.safetensors").write_bytes(os.urandom(256))
    _retarget_manifest(ckpt)
    res = cli(
        "train",
        "charlm",
        "--corpus",
        str(_corpus(tmp_path)),
        "--store",
        str(tmp_path / "runs"),
        "--resume",
        str(ckpt),
        *TINY,
    )
    assert "tensors.safetensors" in _one_line_error(res)


@pytest.mark.parametrize("manifest", ["[]", '{"files": 3}', "\xff\xfe not utf-8"])
def test_resume_with_a_malformed_manifest_is_one_line(cli, tmp_path, manifest):
    ckpt = tmp_path / "step-0000002"
    ckpt.mkdir()
    (ckpt / "manifest.json").write_bytes(manifest.encode("latin-1"))
    res = cli(
        "train",
        "charlm",
        "--corpus",
        str(_corpus(tmp_path)),
        "--store",
        str(tmp_path / "runs"),
        "--resume",
        str(ckpt),
        *TINY,
    )
    assert "manifest.json" in _one_line_error(res)


# ---- expkit check op / attention -----------------------------------------------------------------


@pytest.fixture
def user_modules(tmp_path, monkeypatch):
    """A folder on sys.path with the user's modules; removed from sys.modules afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "h7a_syntax.py").write_text("def f(:\n    pass\n")
    (tmp_path / "h7a_exit7.py").write_text("import sys\nsys.exit(7)\n")
    (tmp_path / "h7a_exit3.py").write_text("import sys\ndef op(x):\n    sys.exit(3)\n")
    (tmp_path / "h7a_raises.py").write_text("raise RuntimeError('boom at import')\n")
    yield tmp_path
    for name in ("h7a_syntax", "h7a_exit7", "h7a_exit3", "h7a_raises"):
        sys.modules.pop(name, None)


def test_check_op_empty_module_name(cli):
    err = _one_line_error(cli("check", "op", ":sm", "--reference", "torch:softmax", "--shape", "4,8"))
    assert "':sm' is not PKG.MOD:FN" in err


def test_check_op_user_module_with_a_syntax_error_names_file_and_line(cli, user_modules):
    err = _one_line_error(cli("check", "op", "h7a_syntax:f", "--reference", "torch:softmax", "--shape", "4,8"))
    assert "h7a_syntax.py:1" in err and "syntax error" in err


def test_check_op_module_that_exits_at_import_is_not_a_silent_exit_7(cli, user_modules):
    err = _one_line_error(cli("check", "op", "h7a_exit7:f", "--reference", "torch:softmax", "--shape", "4"))
    assert "sys.exit(7)" in err


def test_check_op_operator_that_exits_is_not_a_silent_exit_3(cli, user_modules):
    # An operator that ends the process is a failed check (exit 1, issue 36 item 2), never its own exit code.
    err = _one_line_error(cli("check", "op", "h7a_exit3:op", "--reference", "torch:softmax", "--shape", "4"), code=1)
    assert "h7a_exit3:op ended the process: it called sys.exit(3)" in err


def test_check_op_module_that_raises_at_import(cli, user_modules):
    err = _one_line_error(cli("check", "op", "h7a_raises:f", "--reference", "torch:softmax", "--shape", "4"))
    assert "RuntimeError: boom at import" in err


_SOFTMAX = ["torch:softmax", "--reference", "torch:softmax"]


@pytest.mark.parametrize(
    "args",
    [
        ["op", *_SOFTMAX, "--shape", "100000000000,100000000000"],
        ["attention", "--shape", "100000000000,100000000000,10"],
        ["op", *_SOFTMAX, "--shape", ",".join(["1"] * 40)],
    ],
)
def test_check_huge_shape_is_refused_before_allocating(cli, args):
    err = _one_line_error(cli("check", *args))
    assert "more than" in err


def test_check_shape_with_thousands_of_digits_is_clipped_in_the_message(cli):
    err = _one_line_error(cli("check", "op", *_SOFTMAX, "--shape", "9" * 5000 + ",x"))
    assert len(err) < 300


# ---- expkit sft audit / check-stop: bad data and broken model directories ----------------------------


@pytest.fixture(scope="module")
def demo_dir():
    """The quick demo model (cached on disk after the first build)."""
    import warnings

    warnings.filterwarnings("ignore", category=FutureWarning)
    from expkit.finetune.demomodel import ensure_demo_model

    return ensure_demo_model(quick=True).path


@pytest.fixture
def chat_file(tmp_path):
    from expkit.finetune.chatdata import generate_chat_examples, write_chat_jsonl

    return write_chat_jsonl(generate_chat_examples(n=4, seed=0), tmp_path / "chat.jsonl")


def _broken_copy(demo_dir, tmp_path, edit):
    import shutil

    d = tmp_path / "model"
    shutil.copytree(demo_dir, d)
    edit(d)
    return d


def _set_config(d, **values):
    cfg = json.loads((d / "config.json").read_text())
    cfg.update(values)
    (d / "config.json").write_text(json.dumps(cfg))


def _stop_args(model, data):
    return ["sft", "check-stop", "--model", str(model), "--data", str(data), "-n", "1", "--max-new-tokens", "1"]


@pytest.mark.parametrize("command", ["audit", "check-stop"])
def test_sft_non_utf8_chat_data_names_the_line(cli, demo_dir, tmp_path, chat_file, command):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(chat_file.read_bytes() + b'{"messages": [{"role": "user", "content": "\xff\xfe"}]}\n')
    err = _one_line_error(cli("sft", command, "--model", str(demo_dir), "--data", str(bad)))
    assert "bad.jsonl:5:" in err and "invalid UTF-8 (byte 0xff" in err  # the data/jsonl.py reader's wording


def test_sft_audit_reads_chat_data_with_a_bom(cli, demo_dir, tmp_path, chat_file):
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + chat_file.read_bytes())
    res = cli("sft", "audit", "--model", str(demo_dir), "--data", str(bom), "--json")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["result"]["audit"]["examples"] == 4


@pytest.mark.parametrize(
    "content, says",
    [
        (b"{not json", "tokenizer.json:1: tokenizer.json is not JSON"),
        (b"\xff" * 64, "tokenizer.json: tokenizer.json is not UTF-8"),
        (b"[1, 2]", "tokenizer.json holds a list"),
    ],
)
@pytest.mark.parametrize("command", ["audit", "check-stop"])
def test_sft_bad_tokenizer_json_is_named(cli, demo_dir, tmp_path, chat_file, content, says, command):
    model = _broken_copy(demo_dir, tmp_path, lambda d: (d / "tokenizer.json").write_bytes(content))
    args = (
        ["sft", "audit", "--model", str(model), "--data", str(chat_file)]
        if command == "audit"
        else _stop_args(model, chat_file)
    )
    assert says in _one_line_error(cli(*args))


def test_sft_bad_chat_template_is_named(cli, demo_dir, tmp_path, chat_file):
    def edit(d):
        (d / "chat_template.jinja").write_text("{% for m in messages %}{{ m.content ")

    model = _broken_copy(demo_dir, tmp_path, edit)
    err = _one_line_error(cli("sft", "audit", "--model", str(model), "--data", str(chat_file)))
    assert "chat_template.jinja:1: the chat template does not render (TemplateSyntaxError" in err


def test_sft_random_safetensors_is_named(cli, demo_dir, tmp_path, chat_file):
    model = _broken_copy(demo_dir, tmp_path, lambda d: (d / "model.safetensors").write_bytes(os.urandom(1000)))
    err = _one_line_error(cli(*_stop_args(model, chat_file)))
    assert "model.safetensors is not a safetensors file" in err


def test_sft_hidden_size_not_divisible_by_heads_is_named(cli, demo_dir, tmp_path, chat_file):
    model = _broken_copy(demo_dir, tmp_path, lambda d: _set_config(d, num_attention_heads=7))
    err = _one_line_error(cli(*_stop_args(model, chat_file)))
    assert "config.json: hidden_size=64 is not divisible by num_attention_heads=7" in err


@pytest.mark.parametrize(
    "content, says",
    [
        (b"[]", "JSON list, not an object"),
        (b"{", "not valid JSON"),
        (b" " * (4 * 2**20 + 1), "too large for a config.json"),
    ],
)
def test_sft_broken_config_json_is_named(cli, demo_dir, tmp_path, chat_file, content, says):
    model = _broken_copy(demo_dir, tmp_path, lambda d: (d / "config.json").write_bytes(content))
    err = _one_line_error(cli(*_stop_args(model, chat_file)))
    assert "config.json" in err and says in err


# ---- the light install: core commands work, the others name their extra ----------------------------

_BLOCKED = (
    "torch",
    "transformers",
    "peft",
    "trl",
    "datasets",
    "tokenizers",
    "accelerate",
    "safetensors",
    "mlflow",
    "tensorboard",
    "ray",
    "lightning",
)


def _run_light(*args, cwd):
    """``expkit ARGS`` in a fresh interpreter where every optional stack fails to import (as after
    ``pip install expkit``): ``sys.modules[name] = None`` makes ``import name`` raise ImportError."""
    import subprocess

    code = (
        f"import sys\nfor m in {_BLOCKED!r}: sys.modules[m] = None\n"
        "from expkit.cli.app import main\nsys.argv = ['expkit', *sys.argv[1:]]\nmain()\n"
    )
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_light_install_core_commands_work_and_torch_commands_name_the_extra(tmp_path):
    res = _run_light("stats", "ci", "-k", "40", "-n", "80", "--json", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["result"]["estimate"] == 0.5
    res = _run_light(
        "check",
        "op",
        "expkit.check.reference:softmax",
        "--reference",
        "expkit.check.reference:softmax",
        "--backend",
        "numpy",
        "--reference-backend",
        "numpy",
        "--shape",
        "4,8",
        "--json",
        cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr  # check without torch
    assert json.loads(res.stdout)["result"]["ok"] is True
    for args, extra in (
        (["check", "attention"], "torch"),
        (["train", "charlm", "--config", "max_steps=1"], "torch"),
        (["sft", "audit", "--model", str(tmp_path), "--data", str(tmp_path / "d.jsonl")], "hf"),
    ):
        res = _run_light(*args, cwd=tmp_path)
        assert res.returncode == 2, (args, res.stderr)
        assert f"pip install 'expkit[{extra}]'" in res.stderr and "Traceback" not in res.stderr, res.stderr


# ---- found by the fuzz suite (tests/cli/test_fuzz.py) in this owner's files ---------------------------


def test_profile_trace_nested_too_deeply_is_one_line(cli, tmp_path):
    trace = tmp_path / "deep.json"
    trace.write_text("[" * 100_000 + "]" * 100_000)
    assert "too deeply to be a Chrome trace" in _one_line_error(cli("profile", str(trace)))


def test_profile_trace_with_a_bom_is_read(cli, tmp_path):
    trace = tmp_path / "bom.json"
    event = {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "ts": 0, "dur": 10, "pid": 1, "tid": 1}
    trace.write_bytes(b"\xef\xbb\xbf" + json.dumps({"traceEvents": [event]}).encode())
    res = cli("profile", str(trace), "--json")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["result"]["dominant"] == "gemm"


def test_sft_data_with_a_30_digit_count_is_refused_not_filling_memory(cli, tmp_path):
    err = _one_line_error(cli("sft", "data", "--out", str(tmp_path / "d.jsonl"), "-n", "9" * 30))
    assert "n must be in [1, 1,000,000]" in err and not (tmp_path / "d.jsonl").exists()


def test_sft_check_stop_budget_past_the_model_context_is_refused(cli, demo_dir, chat_file):
    err = _one_line_error(
        cli(
            "sft",
            "check-stop",
            "--model",
            str(demo_dir),
            "--data",
            str(chat_file),
            "-n",
            "1",
            "--max-new-tokens",
            "100000",
        )
    )
    assert "exceeds the model's context of 512 positions" in err
    err = _one_line_error(
        cli("sft", "check-stop", "--model", str(demo_dir), "--data", str(chat_file), "--max-new-tokens", "9" * 30)
    )
    assert "--max-new-tokens must be in [1, 1,048,576]" in err


@pytest.mark.parametrize(
    "options, says",
    [
        (["--timeout", "nan"], "--timeout nan must be a finite number"),
        (["--timeout", "-1"], "--timeout -1.0 must be a finite number"),
        (["--out", "{tmp}"], "is a directory; give the trace file"),
        (["--out", "{tmp}/a-file/t.json"], "cannot create the folder"),
    ],
)
def test_profile_script_options_are_checked_before_running(cli, tmp_path, options, says):
    (tmp_path / "a-file").write_text("x")
    marker = tmp_path / "ran.txt"
    script = tmp_path / "s.py"
    script.write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    options = [o.replace("{tmp}", str(tmp_path)) for o in options]
    assert says in _one_line_error(cli("profile", *options, "--", "python", str(script)))
    assert not marker.exists()


# ---- a path that cannot be used: one line naming it (the error boundary's fallback for OSError) ------


@pytest.mark.parametrize(
    "args, says",
    [
        (["sft", "data", "--out", "{tmp}", "-n", "2"], "{tmp}: exists and is a folder, not a regular file"),
        (
            ["sft", "data", "--out", "{tmp}/a-file/x.jsonl", "-n", "2"],
            "{tmp}/a-file: a regular file where a folder is needed (FileExistsError)",
        ),
        (["sft", "demo-model", "--quick", "--out", "{tmp}/a-file/x"], "{tmp}/a-file/x: Not a directory"),
    ],
)
def test_output_path_that_cannot_be_written_is_one_line(cli, tmp_path, args, says):
    (tmp_path / "a-file").write_text("x")
    err = _one_line_error(cli(*[a.replace("{tmp}", str(tmp_path)) for a in args]))
    assert says.replace("{tmp}", str(tmp_path)) in err


def test_boundary_leaves_an_oserror_without_a_path_internal():
    from expkit.cli.app import _path_error

    assert _path_error(OSError(5, "Input/output error")) is None  # EIO and no file name: not the user's path
    assert _path_error(OSError(2, "No such file or directory", "x.jsonl")).path == "x.jsonl"


@pytest.mark.parametrize("threads", ["0", "99999999999999999999"])
def test_sft_check_stop_threads_out_of_range(cli, demo_dir, chat_file, threads):
    err = _one_line_error(
        cli("sft", "check-stop", "--model", str(demo_dir), "--data", str(chat_file), "-n", "1", "--threads", threads)
    )
    assert f"threads={threads} must be in [1, 4096]" in err


def test_profile_trace_with_a_non_numeric_rank_is_read(cli, tmp_path):
    trace = tmp_path / "t.json"
    event = {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "ts": 0, "dur": 10, "pid": 1, "tid": 1}
    trace.write_text(json.dumps({"traceEvents": [event], "distributedInfo": {"rank": "a", "world_size": None}}))
    res = cli("profile", str(trace), "--json")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["result"]["rank"] is None


@pytest.mark.parametrize(
    "line, says",
    [
        ({"messages": [{"role": "assistant", "content": "x"}]}, "conversation starts with an assistant turn"),
        (
            {"messages": [{"role": "user", "content": "\ud800"}, {"role": "assistant", "content": "x"}]},
            "invalid JSON: no low surrogate",  # the data/jsonl.py reader (orjson) refuses the line
        ),
        ({"prompt": "a\udfff", "completion": "b"}, "invalid JSON: invalid high surrogate"),
    ],
)
@pytest.mark.parametrize("command", ["audit", "check-stop"])
def test_sft_chat_lines_no_template_can_render_are_named(cli, demo_dir, tmp_path, line, says, command):
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps(line) + "\n")  # json.dumps escapes the lone surrogate as \ud800
    err = _one_line_error(cli("sft", command, "--model", str(demo_dir), "--data", str(data)))
    assert "d.jsonl:1:" in err and says in err


@pytest.mark.parametrize("tasks", ["", ",", " , "])
def test_sft_data_with_no_task_is_refused(cli, tmp_path, tasks):
    err = _one_line_error(cli("sft", "data", "--out", str(tmp_path / "d.jsonl"), "-n", "1", "--tasks", tasks))
    assert "no task given" in err


def test_sft_config_far_larger_than_its_weights_is_refused_before_loading(cli, demo_dir, tmp_path, chat_file):
    # hidden_size 10**6 would make transformers allocate terabytes; the weights hold ~0.13M values
    model = _broken_copy(demo_dir, tmp_path, lambda d: _set_config(d, hidden_size=10**6, intermediate_size=10**6))
    for args in (_stop_args(model, chat_file), ["sft", "audit", "--model", str(model), "--data", str(chat_file)]):
        err = _one_line_error(cli(*args))
        assert "config.json: config.json describes a model of ~" in err and "the weights hold 131,648 values" in err


def test_sft_config_transformers_refuses_is_named(cli, demo_dir, tmp_path, chat_file):
    # layer_types lists 2 layers; 3 hidden layers is a config transformers validates and refuses
    model = _broken_copy(demo_dir, tmp_path, lambda d: _set_config(d, num_hidden_layers=3))
    err = _one_line_error(cli(*_stop_args(model, chat_file)))
    assert "config.json: transformers refuses config.json" in err


def test_sweep_huge_seed_count_is_refused(cli, tmp_path):
    """Fuzz H6: `--seeds 10**30` was an OverflowError traceback from range()."""
    res = cli("sweep", "--seeds", "9" * 30, "--store", str(tmp_path / "s"), "--", "python", "-c", "pass")
    assert "between 1 and" in _one_line_error(res)
