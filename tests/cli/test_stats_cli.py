"""`expkit stats ci` in-process: exit codes and content."""

from __future__ import annotations

import json


def test_ci_wald_json_is_the_seed_half_width(cli):
    res = cli("stats", "ci", "--correct", "40", "--n", "80", "--method", "wald", "--json")
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)["result"]
    assert round(data["half_width"], 4) == 0.1096
    assert set(data) >= {"estimate", "low", "high", "half_width", "method", "n", "level"}
    assert data["method"] == "wald" and data["n"] == 80 and data["level"] == 0.95


def test_ci_text_output(cli):
    res = cli("stats", "ci", "-k", "3", "-n", "10")
    assert res.exit_code == 0
    assert "3/10 = 0.3000" in res.stdout and "wilson" in res.stdout and "[0.1078, 0.6032]" in res.stdout


def test_ci_exact_method(cli):
    res = cli("stats", "ci", "-k", "0", "-n", "20", "--method", "exact", "--json")
    assert res.exit_code == 0
    assert json.loads(res.stdout)["result"]["low"] == 0.0


def test_bad_values_exit_2_with_one_line(cli):
    for args, needle in [
        (("--correct", "81", "--n", "80"), "correct=81 is larger than n=80"),
        (("--correct", "0", "--n", "0"), "n=0"),
        (("--correct", "5", "--n", "10", "--level", "1.5"), "level=1.5"),
        (("--correct", "-3", "--n", "10"), "correct=-3 is negative"),
        (("--correct", "5", "--n", "10", "--method", "bogus"), "method='bogus'"),
    ]:
        res = cli("stats", "ci", *args)
        assert res.exit_code == 2, (args, res.stdout, res.stderr)
        assert needle in res.stderr
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr
        assert "Traceback" not in res.stderr


def test_missing_option_is_a_usage_error(cli):
    res = cli("stats", "ci", "--n", "80")
    assert res.exit_code == 2
    assert "--correct" in res.stderr


def test_version_and_help(cli):
    from expkit import __version__

    res = cli("--version")
    assert res.exit_code == 0 and res.stdout.strip() == f"expkit {__version__}"
    res = cli("stats", "ci", "--help")
    assert res.exit_code == 0 and "Examples" in res.stdout and "--method" in res.stdout
