"""Inspect AI logs: .json EvalLogs and .eval zips written in Inspect's documented layout (header.json,
samples/<id>_epoch_<n>.json), scores mapped as inspect_ai's value_to_float maps them, epochs as clusters
(the per-model interval and the paired comparison), checked against statsmodels' cluster-robust SE."""

from __future__ import annotations

import json
import math
import zipfile

import numpy as np
import pytest

from expkit.errors import InputError, UsageError
from expkit.integrations.inspect_logs import inspect_value_to_float, read_inspect_log, read_inspect_tasks
from expkit.stats.tables import build_task_tables


def _header(task, model, status="success"):
    return {
        "version": 2,
        "status": status,
        "eval": {
            "eval_id": "e1",
            "run_id": "r1",
            "created": "2026-11-30T10:00:00+00:00",
            "task": task,
            "task_id": "t1",
            "task_version": 0,
            "model": model,
            "dataset": {"name": task, "samples": 3},
            "config": {"epochs": 3},
        },
        "plan": {"name": "plan", "steps": [{"solver": "generate", "params": {}}]},
        "results": {
            "total_samples": 3,
            "completed_samples": 3,
            "scores": [{"name": "match", "scorer": "match", "metrics": {}}],
        },
        "stats": {"started_at": "2026-11-30T10:00:00+00:00", "completed_at": "2026-11-30T10:01:00+00:00"},
    }


def _sample(sid, epoch, value, scorer="match"):
    return {
        "id": sid,
        "epoch": epoch,
        "input": f"question {sid}",
        "target": "A",
        "messages": [{"role": "user", "content": f"question {sid}"}],
        "output": {"model": "m", "choices": [{"message": {"role": "assistant", "content": "A"}}]},
        "scores": {scorer: {"value": value, "answer": "A", "explanation": "A"}},
        "metadata": {},
    }


def write_json_log(path, task, model, samples, status="success"):
    log = _header(task, model, status) | {"samples": samples}
    path.write_text(json.dumps(log))
    return path


def write_eval_log(path, task, model, samples):
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("_journal/start.json", json.dumps({"version": 2, "eval": _header(task, model)["eval"]}))
        for s in samples:
            zf.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
        zf.writestr("summaries.json", json.dumps([{"id": s["id"], "epoch": s["epoch"]} for s in samples]))
        zf.writestr("header.json", json.dumps(_header(task, model)))
    return path


def test_value_to_float_as_inspect_maps_it():
    # inspect_ai.scorer._metric.value_to_float: C 1, P 0.5, I 0, N 0; yes/true 1; no/false 0; numbers as is
    got = [inspect_value_to_float(v) for v in ("C", "I", "P", "N", "Yes", "FALSE", "0.75", 2, False)]
    assert got == [1.0, 0.0, 0.5, 0.0, 1.0, 0.0, 0.75, 2.0, 0.0]
    assert inspect_value_to_float("maybe") is None and inspect_value_to_float([1]) is None


def test_eval_zip_and_json_logs_read_the_same(tmp_path):
    samples = [_sample(i, e, "CIP"[(i + e) % 3]) for i in (1, 2, 3) for e in (1, 2)]
    a = read_inspect_log(write_eval_log(tmp_path / "a.eval", "mmlu", "openai/gpt-4o", samples))
    b = read_inspect_log(write_json_log(tmp_path / "b.json", "mmlu", "openai/gpt-4o", samples))
    assert (a.task, a.model, a.status) == ("mmlu", "openai/gpt-4o", "success")
    assert sorted(a.samples, key=lambda s: (s[0], s[1])) == sorted(b.samples, key=lambda s: (s[0], s[1]))
    assert len(a.samples) == 6


@pytest.fixture
def epoch_logs(tmp_path):
    """Two models on 40 questions x 4 epochs; a question's epochs agree most of the time (clustered)."""
    rng = np.random.default_rng(3)
    n_q, n_ep = 40, 4
    p_q = rng.beta(1.2, 1.0, n_q)  # per-question difficulty: epochs of one question are correlated
    scores = {}
    for model, lift in (("openai/base", 0.0), ("openai/tuned", 0.15)):
        draws = rng.random((n_q, n_ep)) < np.clip(p_q + lift, 0, 1)[:, None]
        scores[model] = draws.astype(int)
        samples = [_sample(f"q{i}", e + 1, "C" if draws[i, e] else "I") for i in range(n_q) for e in range(n_ep)]
        writer = write_eval_log if lift else write_json_log
        writer(tmp_path / f"{model.split('/')[1]}.{'eval' if lift else 'json'}", "arc", model, samples)
    return tmp_path, scores


def test_epochs_are_clusters_in_the_model_interval_and_the_comparison(epoch_logs):
    import statsmodels.api as sm
    from statsmodels.stats.proportion import proportion_confint

    root, truth = epoch_logs
    found = read_inspect_tasks([root / "base.json", root / "tuned.eval"])
    tasks, notes = found.tasks, found.notes
    assert "arc: 4 epochs; the sample id is the cluster of its epochs" in notes
    tt = build_task_tables(tasks, source="inspect")
    (tb,) = tt.tables
    rows = {r.model: r for r in tb.models}
    for model, draws in truth.items():
        y = draws.reshape(-1).astype(float)  # row-major: question i's epochs together
        groups = np.repeat(np.arange(draws.shape[0]), draws.shape[1])
        fit = sm.OLS(y, np.ones_like(y)).fit(cov_type="cluster", cov_kwds={"groups": groups})
        se_cluster = float(fit.bse[0])  # statsmodels: G/(G-1) * (N-1)/(N-K) correction, K = 1
        p, n = y.mean(), y.size
        deff = max(1.0, se_cluster**2 / (p * (1 - p) / n))
        r = rows[model]
        assert r.interval == "wilson-clustered" and r.n_clusters == 40
        assert r.design_effect == pytest.approx(deff, rel=1e-9)
        # Wilson on the effective n = n / deff (hand formula), wider than the plain Wilson on all 160 rows
        z = 1.959963984540054
        ne = n / deff
        centre = (p + z * z / (2 * ne)) / (1 + z * z / ne)
        half = z / (1 + z * z / ne) * math.sqrt(p * (1 - p) / ne + z * z / (4 * ne * ne))
        assert (r.low, r.high) == pytest.approx((centre - half, centre + half), abs=1e-12)
        lo, hi = proportion_confint(int(y.sum()), n, method="wilson")
        assert deff > 1.2 and r.high - r.low > (hi - lo) * 1.05
    (c,) = tb.comparisons
    assert c.comparison.method == "clustered-se" and c.comparison.n_clusters == 40
    d = (truth["openai/tuned"] - truth["openai/base"]).reshape(-1).astype(float)
    groups = np.repeat(np.arange(40), 4)
    fit = sm.OLS(d, np.ones_like(d)).fit(cov_type="cluster", cov_kwds={"groups": groups})
    assert c.comparison.delta == pytest.approx(d.mean(), rel=1e-12)
    half = (c.comparison.high - c.comparison.low) / 2
    assert half == pytest.approx(1.959963984540054 * float(fit.bse[0]), rel=1e-9)


def test_one_epoch_has_no_clusters_and_partial_credit_is_graded(tmp_path):
    write_json_log(tmp_path / "a.json", "qa", "m/a", [_sample(i, 1, v) for i, v in enumerate("CCIPNC")])
    write_json_log(tmp_path / "b.json", "qa", "m/b", [_sample(i, 1, v) for i, v in enumerate("CCCCIC")])
    found = read_inspect_tasks([tmp_path / "a.json", tmp_path / "b.json"])
    tasks, _ = found.tasks, found.notes
    (t,) = tasks
    assert t.results.clusters is None
    assert sorted(t.results.scores["m/a"].values()) == [0.0, 0.0, 0.5, 1.0, 1.0, 1.0]


def test_bad_logs_are_input_errors(tmp_path):
    write_json_log(tmp_path / "a.json", "qa", "m/a", [_sample(1, 1, "maybe")])
    write_json_log(tmp_path / "b.json", "qa", "m/b", [_sample(1, 1, "C")])
    with pytest.raises(InputError, match=r"a\.json \(sample 1, epoch 1\).*'maybe'"):
        read_inspect_tasks([tmp_path / "a.json", tmp_path / "b.json"])
    (tmp_path / "c.eval").write_bytes(b"PK not a zip")
    with pytest.raises(InputError, match=r"c\.eval"):
        read_inspect_log(tmp_path / "c.eval")
    (tmp_path / "d.json").write_text('{"samples": []}')
    with pytest.raises(InputError, match="not an Inspect EvalLog"):
        read_inspect_log(tmp_path / "d.json")
    write_json_log(tmp_path / "e.json", "qa", "m/a", [_sample(1, 1, "C")])
    with pytest.raises(InputError, match="a second log for task 'qa' and model 'm/a'"):
        read_inspect_tasks([tmp_path / "b.json", tmp_path / "e.json", tmp_path / "a.json"])
    with pytest.raises(UsageError, match="no scorer 'f1'"):
        read_inspect_tasks([tmp_path / "e.json", tmp_path / "b.json"], metric="f1")


def test_cli_table_from_inspect(cli, epoch_logs):
    root, _ = epoch_logs
    res = cli("stats", "table", "--from", "inspect", str(root / "base.json"), str(root / "tuned.eval"), "--json")
    assert res.exit_code == 0, res.stderr
    r = json.loads(res.stdout)["result"]
    (tb,) = r["tables"]
    assert tb["task"] == "arc" and tb["models"][0]["interval"] == "wilson-clustered"
    res = cli("stats", "table", "--from", "inspect", str(root / "base.json"), str(root / "tuned.eval"))
    assert res.exit_code == 0 and "40 clusters" in res.stdout and "openai/tuned" in res.stdout
    res = cli("stats", "table", "--from", "inspect", str(root / "base.json"), "--filter", "x")
    assert res.exit_code == 2 and "--filter applies to --from lm-eval" in res.stderr


def test_a_log_directory_is_read_and_other_json_passed_over(epoch_logs):
    root, _ = epoch_logs
    (root / "logs.json").write_text('{"base.json": {"status": "success"}}')  # the viewer's index
    found = read_inspect_tasks([root])
    tasks, notes = found.tasks, found.notes
    assert [t.task for t in tasks] == ["arc"] and tasks[0].results.models == ("openai/base", "openai/tuned")
    assert any("1 .json file(s) that are not EvalLogs passed over" in n for n in notes)
    with pytest.raises(InputError, match="holds no Inspect logs"):
        read_inspect_tasks([root / "empty"] if (root / "empty").mkdir() is None else [])


def test_nan_written_by_pydantic_is_read_and_an_unscored_sample_left_out(tmp_path):
    # pydantic (inspect_ai/_util/json.py to_json) writes float NaN as the bare constant NaN: a NaN stderr in
    # results, and Score.unscored()'s value, which Inspect's metrics skip; orjson alone refuses such a file
    a = [_sample(1, 1, "C"), _sample(2, 1, float("nan")), _sample(3, 1, "I")]
    for log in (
        _header("qa", "m/a") | {"samples": a},
        _header("qa", "m/b") | {"samples": [_sample(i, 1, "C") for i in (1, 2, 3)]},
    ):
        log["results"]["scores"][0]["metrics"] = {"stderr": {"name": "stderr", "value": float("nan")}}
    write_json_log(tmp_path / "a.json", "qa", "m/a", a)
    text = (tmp_path / "a.json").read_text()
    assert "NaN" in text  # json.dumps, like pydantic, writes the constant
    write_eval_log(tmp_path / "b.eval", "qa", "m/b", [_sample(i, 1, "C") for i in (1, 2, 3)])
    found = read_inspect_tasks([tmp_path / "a.json", tmp_path / "b.eval"])
    tasks, notes = found.tasks, found.notes
    assert tasks[0].results.scores["m/a"] == {"1#1": 1.0, "3#1": 0.0}  # the NaN sample is not an item
    assert (
        "qa: 1 (sample, epoch) scores are NaN (Score.unscored), left out as Inspect's metrics leave them out" in notes
    )
    # a directory read finds the NaN-holding .json as an EvalLog, not as other JSON to pass over
    assert [t.task for t in read_inspect_tasks([tmp_path]).tasks] == ["qa"]


def _with_method(data: bytes, name: str, method: int, *, size: int, crc: int) -> bytes:
    """A zip's bytes with member ``name`` relabelled: compression ``method``, uncompressed ``size`` and ``crc``
    (its stored bytes are then read as that method's stream), in the local header and the central directory."""
    import struct

    buf = bytearray(data)
    with zipfile.ZipFile(__import__("io").BytesIO(data)) as zf:
        off = zf.getinfo(name).header_offset
    struct.pack_into("<H", buf, off + 8, method)
    struct.pack_into("<I", buf, off + 14, crc)
    struct.pack_into("<I", buf, off + 22, size)
    at = buf.find(b"PK\x01\x02")
    while at != -1:
        n = struct.unpack_from("<H", buf, at + 28)[0]
        if bytes(buf[at + 46 : at + 46 + n]) == name.encode():
            struct.pack_into("<H", buf, at + 10, method)
            struct.pack_into("<I", buf, at + 16, crc)
            struct.pack_into("<I", buf, at + 24, size)
        at = buf.find(b"PK\x01\x02", at + 4)
    return bytes(buf)


def _zstd_eval(path, payload_of):
    """An .eval whose header.json is a Zstandard member (method 93, Inspect's default; inspect_ai #4553)."""
    import zlib

    header = json.dumps(_header("qa", "m/a")).encode()
    write_eval_log(path, "qa", "m/a", [_sample(1, 1, "C")])
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        for n, b in members.items():
            zf.writestr(n, payload_of(header) if n == "header.json" else b)
    path.write_bytes(_with_method(path.read_bytes(), "header.json", 93, size=len(header), crc=zlib.crc32(header)))
    return path


def test_a_zstd_eval_member_without_a_zstd_reader_is_an_input_error_naming_it(tmp_path, monkeypatch):
    import sys

    if hasattr(zipfile, "ZIP_ZSTANDARD"):
        pytest.skip("this Python's zipfile reads Zstandard itself")
    monkeypatch.setitem(sys.modules, "zstandard", None)  # as on a machine without the package
    path = _zstd_eval(tmp_path / "z.eval", lambda b: b"not zstd")
    with pytest.raises(InputError, match=r"z\.eval.*header\.json is Zstandard-compressed \(zip method 93"):
        read_inspect_log(path)


def test_a_zstd_eval_member_is_read_with_the_zstandard_package(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    if hasattr(zipfile, "ZIP_ZSTANDARD"):
        pytest.skip("this Python's zipfile reads Zstandard itself")
    path = _zstd_eval(tmp_path / "z.eval", lambda b: zstandard.ZstdCompressor().compress(b))
    log = read_inspect_log(path)
    assert (log.task, log.model, log.samples) == ("qa", "m/a", (("1", 1, {"match": "C"}),))


def test_the_first_eval_layout_with_start_json_is_read(tmp_path):
    # inspect_ai's first .eval recorder wrote start.json and results.json at the zip's root (no header.json)
    with zipfile.ZipFile(tmp_path / "old.eval", "w") as zf:
        zf.writestr("start.json", json.dumps({"version": 2, "eval": _header("qa", "m/a")["eval"]}))
        zf.writestr("samples/1_epoch_1.json", json.dumps(_sample(1, 1, "I")))
        zf.writestr("results.json", json.dumps({"status": "success"}))
    log = read_inspect_log(tmp_path / "old.eval")
    assert (log.task, log.model, log.samples) == ("qa", "m/a", (("1", 1, {"match": "I"}),))


def test_an_empty_log_directory_after_a_full_one_is_still_an_error(epoch_logs, tmp_path):
    root, _ = epoch_logs
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"empty.*holds no Inspect logs"):
        read_inspect_tasks([root, tmp_path / "empty"])


def test_a_log_without_samples_is_an_input_error_not_a_crash(tmp_path, cli):
    # Inspect's header-only .json (or a log written with --no-log-samples) has no samples to pair
    write_json_log(tmp_path / "a.json", "qa", "m/a", [])
    write_json_log(tmp_path / "b.json", "qa", "m/b", [_sample(1, 1, "C")])
    with pytest.raises(InputError, match=r"a\.json.*holds no scored samples"):
        read_inspect_tasks([tmp_path / "a.json", tmp_path / "b.json"])
    res = cli("stats", "table", "--from", "inspect", str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert res.exit_code == 2 and "holds no scored samples" in res.stderr  # was exit 3: max() of nothing


def test_an_eval_set_retry_keeps_the_successful_log(tmp_path):
    # the failed attempt (status error, no samples) beside the retry that succeeded, in either order
    write_json_log(tmp_path / "1-a-error.json", "qa", "m/a", [], status="error")
    write_json_log(tmp_path / "2-a.json", "qa", "m/a", [_sample(1, 1, "C"), _sample(2, 1, "I")])
    write_json_log(tmp_path / "3-b.json", "qa", "m/b", [_sample(1, 1, "C"), _sample(2, 1, "C")])
    found = read_inspect_tasks([tmp_path])
    tasks, notes = found.tasks, found.notes
    assert tasks[0].results.scores["m/a"] == {"1#1": 1.0, "2#1": 0.0}
    assert any("used" in n and "2-a.json (success), not" in n and "1-a-error.json (error)" in n for n in notes)
    write_json_log(tmp_path / "4-a.json", "qa", "m/a", [_sample(1, 1, "I")])  # two successes: which one?
    with pytest.raises(InputError, match="a second log for task 'qa' and model 'm/a'"):
        read_inspect_tasks([tmp_path])


def test_two_logs_of_one_model_compare_through_labels(tmp_path, cli):
    # the same model and task run twice (two prompts): refused as a second log without labels, a paired
    # comparison on the sample ids with them (a .json log against an .eval log)
    a_vals = ["C", "I", "C", "C", "I", "C", "I", "I"] * 5
    b_vals = ["C", "C", "C", "C", "I", "C", "C", "I"] * 5
    a = [_sample(f"s{i}", 1, v) for i, v in enumerate(a_vals)]
    b = [_sample(f"s{i}", 1, v) for i, v in enumerate(b_vals)]
    write_json_log(tmp_path / "prompt1.json", "qa", "openai/gpt-x", a)
    write_eval_log(tmp_path / "prompt2.eval", "qa", "openai/gpt-x", b)
    res = cli("stats", "table", "--from", "inspect", str(tmp_path / "prompt1.json"), str(tmp_path / "prompt2.eval"))
    assert res.exit_code == 2 and "a second log" in res.stderr
    res = cli(
        "stats", "table", "--from", "inspect", "-l", f"p1={tmp_path / 'prompt1.json'}",
        "-l", f"p2={tmp_path / 'prompt2.eval'}:match", "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr
    (tb,) = json.loads(res.stdout)["result"]["tables"]
    assert [m["model"] for m in tb["models"]] == ["p1", "p2"]
    c = tb["comparisons"][0]["comparison"]
    # p2 right where p1 was wrong on items 1 and 6 of each block of 8: 10 discordant, all for B
    assert c["paired"] and c["n_common"] == 40 and (c["a_only"], c["b_only"]) == (10, 0)
    assert c["delta"] == pytest.approx(10 / 40)
    assert c["p_value"] == pytest.approx(2 * 0.5**10)  # exact McNemar: binomial(10, 1/2), two-sided


def test_a_deflate_bomb_member_is_refused_whatever_its_header_says(tmp_path, monkeypatch):
    # a real deflate bomb (4 MiB of spaces in a few KiB): past the bound it is refused by name; a header that
    # understates its size makes zipfile stop at the stated size (CRC error), an InputError too, never 4 MiB read
    from expkit.integrations import inspect_logs

    monkeypatch.setattr(inspect_logs, "MAX_MEMBER_BYTES", 1 << 20)  # 1 MiB here, 1 GiB in use
    path = tmp_path / "bomb.eval"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("header.json", json.dumps(_header("qa", "m/a")))
        zf.writestr("samples/1_epoch_1.json", b"{" + b" " * (4 << 20) + b"}")
    assert path.stat().st_size < 64 << 10
    with pytest.raises(InputError, match=r"samples/1_epoch_1.json inflates to more than 0 GiB \(4,194,306 bytes"):
        read_inspect_log(path)
    with zipfile.ZipFile(path) as zf:
        crc = zf.getinfo("samples/1_epoch_1.json").CRC
    lying = _with_method(path.read_bytes(), "samples/1_epoch_1.json", zipfile.ZIP_DEFLATED, size=100, crc=crc)
    path.write_bytes(lying)
    with pytest.raises(InputError, match=r"Bad CRC-32 for file 'samples/1_epoch_1.json'"):
        read_inspect_log(path)


def _failed_log(path, task, model, *, status="error", message=None):
    # as Inspect writes a failed eval's log: status "error", EvalLog.error = EvalError(message, traceback,
    # traceback_ansi), no samples; inspect_ai is not installed here, so the JSON is written by hand
    log = _header(task, model, status) | {"samples": []}
    log["results"] = None
    if message is not None:
        tb = f'Traceback (most recent call last):\n  File "task.py", line 3, in solve\nRuntimeError: {message}\n'
        log["error"] = {"message": message, "traceback": tb, "traceback_ansi": tb}
    path.write_text(json.dumps(log))
    return path


def test_a_failed_eval_says_it_failed_with_inspects_message(tmp_path, cli):
    # issue 21: a failed eval's log was told to "re-run with samples logged"
    bad = _failed_log(tmp_path / "a.json", "qa", "m/a", message="RateLimitError('429: quota\nexceeded')")
    good = write_json_log(tmp_path / "b.json", "qa", "m/b", [_sample(1, 1, "C")])
    with pytest.raises(InputError, match=r"the eval failed before any sample was scored") as info:
        read_inspect_tasks([bad, good])
    message = str(info.value)
    assert "status 'error': RateLimitError('429: quota exceeded')" in message
    assert "samples logged" not in message and "samples logged" not in (info.value.hint or "")
    res = cli("stats", "table", "--from", "inspect", str(bad), str(good))
    assert res.exit_code == 2 and "the eval failed" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_a_failed_or_cancelled_eval_without_a_message_and_a_sampleless_success(tmp_path):
    good = write_json_log(tmp_path / "b.json", "qa", "m/b", [_sample(1, 1, "C")])
    for status, what in (("error", "failed"), ("cancelled", "was cancelled")):
        bad = _failed_log(tmp_path / f"{status}.json", "qa", "m/a", status=status)
        with pytest.raises(InputError, match=rf"the eval {what} before any sample was scored \(status '{status}'\)"):
            read_inspect_tasks([bad, good])
    empty = write_json_log(tmp_path / "empty.json", "qa", "m/a", [])  # a success logged without samples
    with pytest.raises(InputError, match="holds no scored samples") as info:
        read_inspect_tasks([empty, good])
    assert "samples logged" in (info.value.hint or "")


def test_a_failed_eval_with_samples_is_read_and_its_error_noted(tmp_path):
    part = _failed_log(tmp_path / "a.json", "qa", "m/a", message="killed after 2 samples")
    log = json.loads(part.read_text())
    log["samples"] = [_sample(1, 1, "C"), _sample(2, 1, "I")]
    part.write_text(json.dumps(log))
    good = write_json_log(tmp_path / "b.json", "qa", "m/b", [_sample(1, 1, "C"), _sample(2, 1, "C")])
    found = read_inspect_tasks([part, good])
    assert found.tasks[0].results.scores["m/a"] == {"1#1": 1.0, "2#1": 0.0}
    assert any("status 'error': killed after 2 samples (read what it holds)" in n for n in found.notes)
