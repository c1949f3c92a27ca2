"""``expkit check attention`` and ``expkit check op``: JSON fields, exit 0 / 1 / 2."""

from __future__ import annotations

import json


def test_attention_json_float32_and_float64(cli):
    r = cli("check", "attention", "--shape", "2,16,8", "--json")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)["result"]
    assert d["ok"] is True and 0 < d["max_abs_error"] < 1e-6 and d["tolerance"] > d["max_abs_error"]
    r64 = cli("check", "attention", "--dtype", "float64", "--shape", "1,2,16,8", "--json")
    assert json.loads(r64.stdout)["result"]["max_abs_error"] < 1e-13


def test_attention_text_and_bad_shape(cli):
    r = cli("check", "attention", "--shape", "1,8,4")
    assert r.exit_code == 0 and "numpy causal attention vs torch SDPA" in r.stdout and ": ok" in r.stdout
    bad = cli("check", "attention", "--shape", "8,4")
    assert bad.exit_code == 2 and "give B,T,D or B,H,T,D" in bad.stderr
    bad = cli("check", "attention", "--shape", "a,b,c")
    assert bad.exit_code == 2 and "not a comma-separated list" in bad.stderr


def test_op_pass_and_fail(cli):
    ok = cli(
        "check",
        "op",
        "torch.nn.functional:gelu",
        "--reference",
        "torch.nn.functional:gelu",
        "--shape",
        "4,8",
        "--grad",
        "--json",
    )
    assert ok.exit_code == 0, ok.stderr
    assert json.loads(ok.stdout)["result"]["ok"] is True
    bad = cli("check", "op", "torch:exp", "--reference", "torch:expm1", "--shape", "4,8")
    assert bad.exit_code == 1
    assert "torch:exp differs from torch:expm1" in bad.stderr and "over tolerance" in bad.stdout


def test_op_numpy_reference_and_multi_arg(cli):
    r = cli(
        "check",
        "op",
        "torch:matmul",
        "--reference",
        "numpy:matmul",
        "--reference-backend",
        "numpy",
        "--shape",
        "4,8;8,3",
        "--dtype",
        "float64",
    )
    assert r.exit_code == 0, r.stderr
    assert "4x8 8x3 (out)" in r.stdout


def test_op_unknown_module_exits_2(cli):
    r = cli("check", "op", "nope_pkg:f", "--reference", "torch:exp", "--shape", "3")
    assert r.exit_code == 2 and "cannot import module 'nope_pkg'" in r.stderr
