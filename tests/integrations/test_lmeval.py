"""lm-evaluation-harness output directories: files written as lm_eval --output_path DIR --log_samples writes
them (lm_eval/loggers/evaluation_tracker.py, lm_eval/evaluator.py), read into per-task paired tables
whose McNemar p, Wilson intervals and Holm adjustment are checked against statsmodels."""

from __future__ import annotations

import json

import numpy as np
import pytest

from expkit.errors import InputError, UsageError
from expkit.integrations.lmeval import find_lmeval_runs, read_lmeval_tasks
from expkit.stats.tables import build_task_tables

DATE = "2026-11-30T10-00-00.123456"


def _gsm8k_scores(rng, n, p):
    return (rng.random(n) < p).astype(int)


def write_lmeval_run(root, model, tasks, *, date=DATE, model_name=True, log_samples=True):
    """``root/<sanitized model>/results_<date>.json`` and ``samples_<task>_<date>.jsonl``.

    ``tasks``: task -> {filter: {metric: per-doc scores}}."""
    d = root / model.replace("/", "__")
    d.mkdir(parents=True, exist_ok=True)
    results = {
        "results": {},
        "config": {"model": "hf", "model_args": f"pretrained={model},dtype=float32", "batch_size": 8},
        "versions": {t: 3.0 for t in tasks},
        "n-shot": {t: 0 for t in tasks},
    }
    if model_name:
        results.update({"model_name": model, "model_name_sanitized": model.replace("/", "__")})
    for task, by_filter in tasks.items():
        results["results"][task] = {"alias": task}
        lines = []
        n_docs = len(next(iter(next(iter(by_filter.values())).values())))
        for doc_id in range(n_docs):
            for filt, metrics in by_filter.items():
                results["results"][task].update(
                    {f"{m},{filt}": float(np.mean(v)) for m, v in metrics.items() if not isinstance(v, list)}
                )
                sample = {
                    "doc_id": doc_id,
                    "doc": {"question": f"q{doc_id}", "answer": "42"},
                    "target": "42",
                    "arguments": {"gen_args_0": {"arg_0": f"Question: q{doc_id}\nAnswer:", "arg_1": {}}},
                    "resps": [["42"]],
                    "filtered_resps": ["42"],
                    "filter": filt,
                    "metrics": list(metrics),
                    "doc_hash": "d",
                    "prompt_hash": "p",
                    "target_hash": "t",
                }
                sample.update(
                    {m: (v[doc_id] if isinstance(v[doc_id], list) else float(v[doc_id])) for m, v in metrics.items()}
                )
                lines.append(json.dumps(sample, ensure_ascii=False))
        if log_samples:
            (d / f"samples_{task}_{date}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (d / f"results_{date}.json").write_text(json.dumps(results, indent=2))
    return d


@pytest.fixture
def two_models(tmp_path):
    rng = np.random.default_rng(7)
    base_g = _gsm8k_scores(rng, 120, 0.45)
    new_g = np.where(rng.random(120) < 0.8, base_g, 1 - base_g)  # correlated with the baseline
    new_g[:12] = 1
    flex_b, flex_n = np.maximum(base_g, rng.random(120) < 0.1), np.maximum(new_g, rng.random(120) < 0.1)
    base_a = _gsm8k_scores(rng, 60, 0.6)
    new_a = np.where(rng.random(60) < 0.9, base_a, 1 - base_a)
    a = write_lmeval_run(
        tmp_path / "out_base",
        "org/base-1b",
        {
            "gsm8k": {"strict-match": {"exact_match": base_g}, "flexible-extract": {"exact_match": flex_b}},
            "arc_easy": {"none": {"acc": base_a, "acc_norm": base_a}},
        },
    )
    b = write_lmeval_run(
        tmp_path / "out_new",
        "org/tuned-1b",
        {
            "gsm8k": {"strict-match": {"exact_match": new_g}, "flexible-extract": {"exact_match": flex_n}},
            "arc_easy": {"none": {"acc": new_a, "acc_norm": new_a}},
        },
    )
    return (
        tmp_path,
        (a.parent, b.parent),
        {"gsm8k": (base_g, new_g), "arc_easy": (base_a, new_a), "flex": (flex_b, flex_n)},
    )


def test_runs_are_found_under_the_model_subdirectory_with_the_model_name(two_models):
    _, dirs, _ = two_models
    found = find_lmeval_runs(dirs)
    runs, notes = found.runs, found.notes
    assert [r.model for r in runs] == ["org/base-1b", "org/tuned-1b"] and notes == ()
    assert sorted(runs[0].samples) == ["arc_easy", "gsm8k"]


def test_tables_match_statsmodels_mcnemar_wilson_and_holm(two_models):
    from statsmodels.stats.contingency_tables import mcnemar
    from statsmodels.stats.multitest import multipletests
    from statsmodels.stats.proportion import proportion_confint

    _, dirs, truth = two_models
    found = read_lmeval_tasks(dirs)
    tasks, notes = found.tasks, found.notes
    tt = build_task_tables(tasks, source="lm-eval", notes=tuple(notes))
    assert [t.task for t in tt.tables] == ["arc_easy", "gsm8k"] and tt.n_comparisons == 2
    assert any("gsm8k: filter strict-match (also logged: flexible-extract" in n for n in tt.notes)
    assert any("arc_easy: metric acc (also logged: acc_norm" in n for n in tt.notes)
    raw_p = []
    for tb in tt.tables:
        base, new = truth[tb.task]
        rows = {r.model: r for r in tb.models}
        for model, arr in (("org/base-1b", base), ("org/tuned-1b", new)):
            lo, hi = proportion_confint(int(arr.sum()), arr.size, alpha=0.05, method="wilson")
            assert (rows[model].low, rows[model].high) == pytest.approx((lo, hi), abs=1e-12)
        (c,) = tb.comparisons
        b_only, c_only = int(np.sum((new == 1) & (base == 0))), int(np.sum((new == 0) & (base == 1)))
        assert (c.comparison.a_only, c.comparison.b_only) == (b_only, c_only)
        exact = b_only + c_only <= 25
        ref = mcnemar([[0, b_only], [c_only, 0]], exact=exact, correction=True).pvalue
        assert c.comparison.p_value == pytest.approx(ref, rel=1e-10)
        raw_p.append(c.comparison.p_value)
    holm = multipletests(raw_p, method="holm")[1]
    assert [tb.comparisons[0].p_holm for tb in tt.tables] == pytest.approx(list(holm), rel=1e-12)


def test_filter_and_metric_selection(two_models):
    _, dirs, truth = two_models
    found = read_lmeval_tasks(dirs, tasks=["gsm8k"], filter_name="flexible-extract")
    tasks, _ = found.tasks, found.notes
    (t,) = tasks
    flex_b, _ = truth["flex"]
    assert sum(t.results.scores["org/base-1b"].values()) == flex_b.sum()
    with pytest.raises(UsageError, match=r"no filter 'bogus'.*flexible-extract"):
        read_lmeval_tasks(dirs, tasks=["gsm8k"], filter_name="bogus")
    # a task that logs one filter ("none") takes it, said in a note
    found = read_lmeval_tasks(dirs, filter_name="flexible-extract")
    tasks, notes = found.tasks, found.notes
    assert [t.task for t in tasks] == ["arc_easy", "gsm8k"]
    assert "arc_easy: filter flexible-extract not logged; its only filter none used" in notes
    with pytest.raises(UsageError, match=r"no per-item metric 'f1'"):
        read_lmeval_tasks(dirs, tasks=["arc_easy"], metric="f1")
    with pytest.raises(UsageError, match=r"task 'mmlu': no samples"):
        read_lmeval_tasks(dirs, tasks=["mmlu"])


def test_one_output_path_holding_both_models_and_model_name_from_model_args(tmp_path):
    s = {"boolq": {"none": {"acc": np.array([1, 0, 1, 1])}}}
    write_lmeval_run(tmp_path / "out", "org/a", s, model_name=False)
    write_lmeval_run(tmp_path / "out", "org/b", {"boolq": {"none": {"acc": np.array([1, 1, 1, 1])}}}, model_name=False)
    found = find_lmeval_runs([tmp_path / "out"])
    runs, _ = found.runs, found.notes
    assert sorted(r.model for r in runs) == ["org/a", "org/b"]  # pretrained=... in config.model_args


def test_a_rerun_keeps_each_tasks_latest_samples_and_says_so(tmp_path):
    s = {"boolq": {"none": {"acc": np.array([1, 0, 1, 1])}}}
    write_lmeval_run(tmp_path / "a", "org/a", s, date="2026-01-01T00-00-00.000001")
    write_lmeval_run(
        tmp_path / "a", "org/a", s | {"piqa": {"none": {"acc": np.array([1, 1])}}}, date="2026-02-01T00-00-00.000001"
    )
    write_lmeval_run(
        tmp_path / "a", "org/a", {"arc": {"none": {"acc": np.array([0, 1])}}}, date="2026-03-01T00-00-00.000001"
    )
    (run,) = find_lmeval_runs([tmp_path / "a"]).runs
    notes = find_lmeval_runs([tmp_path / "a"]).notes
    assert sorted(run.samples) == ["arc", "boolq", "piqa"]  # runs of different tasks add up
    assert "2026-02-01" in run.samples["boolq"] and len(run.results_files) == 2
    assert notes == (
        f"org/a: task boolq run more than once, used {run.samples['boolq']} "
        f"(not {run.samples['boolq'].replace('2026-02-01', '2026-01-01')})",
    )


def test_one_model_in_two_given_directories_is_two_configurations(tmp_path):
    write_lmeval_run(tmp_path / "zero_shot", "org/a", {"boolq": {"none": {"acc": np.array([1, 0, 1, 1])}}})
    write_lmeval_run(tmp_path / "five_shot", "org/a", {"boolq": {"none": {"acc": np.array([1, 1, 1, 1])}}})
    found = find_lmeval_runs([tmp_path / "zero_shot", tmp_path / "five_shot"])
    runs, _ = found.runs, found.notes
    assert [r.model for r in runs] == ["org/a [zero_shot]", "org/a [five_shot]"]


def test_errors_name_the_file(tmp_path):
    with pytest.raises(InputError, match="holds no results_"):
        find_lmeval_runs([tmp_path])
    write_lmeval_run(tmp_path / "x", "org/a", {"boolq": {"none": {"acc": np.array([1, 0])}}}, log_samples=False)
    with pytest.raises(InputError, match=r"--log_samples"):
        find_lmeval_runs([tmp_path / "x"])
    bleu = {"wmt": {"none": {"bleu": [["ref a", "hyp a"], ["ref b", "hyp b"]]}}}
    write_lmeval_run(tmp_path / "y", "org/a", bleu)
    write_lmeval_run(tmp_path / "y", "org/b", bleu)
    with pytest.raises(InputError, match=r"samples_wmt_.*\.jsonl:1: metric 'bleu' has the per-item value"):
        read_lmeval_tasks([tmp_path / "y"])


def test_cli_table_from_lm_eval_json_and_text(cli, two_models):
    _, dirs, _ = two_models
    res = cli("stats", "table", "--from", "lm-eval", *map(str, dirs), "--json")
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["command"] == "stats table"
    r = out["result"]
    assert r["baseline"] == "org/base-1b" and r["source"] == "lm-eval"
    assert [t["task"] for t in r["tables"]] == ["arc_easy", "gsm8k"]
    res = cli("stats", "table", "--from", "lm-eval", *map(str, dirs), "--task", "gsm8k", "--format", "markdown")
    assert res.exit_code == 0, res.stderr
    assert "### gsm8k" in res.stdout and "org/tuned-1b" in res.stdout and "arc_easy" not in res.stdout
    res = cli("stats", "table", "--from", "lm-eval", str(dirs[0]))
    assert res.exit_code == 2 and "a comparison needs two" in res.stderr
    res = cli("stats", "table", str(dirs[0]), "--metric", "acc")
    assert res.exit_code == 2 and "--metric applies to --from lm-eval" in res.stderr


def test_output_path_given_as_a_json_file_and_a_nan_stderr_in_results(tmp_path):
    # EvaluationTracker.save_results_aggregated: --output_path out/run.json writes out/run_<date>.json (not
    # results_<date>.json) and the samples beside it; json.dumps spells a NaN stderr as the constant NaN
    for model, acc in (("org/a", [1, 0, 1, 1]), ("org/b", [1, 1, 1, 1])):
        d = write_lmeval_run(tmp_path / model.split("/")[1], model, {"boolq": {"none": {"acc": np.array(acc)}}})
        res = d / f"results_{DATE}.json"
        data = json.loads(res.read_text())
        data["results"]["boolq"]["acc_stderr,none"] = float("nan")
        res.unlink()
        (d / f"run_{DATE}.json").write_text(json.dumps(data))
        assert "NaN" in (d / f"run_{DATE}.json").read_text()
    (tmp_path / "a" / "org__a" / "unrelated_2026-01-01T00-00-00.json").write_text("{}")  # no samples beside it
    found = find_lmeval_runs([tmp_path / "a", tmp_path / "b"])
    runs, _ = found.runs, found.notes
    assert [r.model for r in runs] == ["org/a", "org/b"]
    assert runs[0].results_files == (str(tmp_path / "a" / "org__a" / f"run_{DATE}.json"),)
    found = read_lmeval_tasks([tmp_path / "a", tmp_path / "b"])
    tasks, _ = found.tasks, found.notes
    assert tasks[0].results.scores["org/a"] == {"0": 1.0, "1": 0.0, "2": 1.0, "3": 1.0}


def test_an_older_log_without_filter_keys_says_why_a_doc_id_repeats(tmp_path):
    # lm_eval/evaluator.py before the 'filter' and 'metrics' keys: one line per (doc, filter), no filter named
    gsm = {
        "gsm8k": {
            "strict-match": {"exact_match": np.array([1, 0])},
            "flexible-extract": {"exact_match": np.array([1, 1])},
        }
    }
    for m in ("org/a", "org/b"):
        d = write_lmeval_run(tmp_path, m, gsm)
        f = d / f"samples_gsm8k_{DATE}.jsonl"
        rows = [json.loads(x) for x in f.read_text().splitlines()]
        f.write_text(
            "".join(json.dumps({k: v for k, v in r.items() if k not in ("filter", "metrics")}) + "\n" for r in rows)
        )
    with pytest.raises(InputError, match=r"doc_id 0 appears twice.*an older harness logs no 'filter' key"):
        read_lmeval_tasks([tmp_path])


def test_an_empty_samples_file_is_an_input_error(tmp_path):
    write_lmeval_run(tmp_path, "org/a", {"boolq": {"none": {"acc": np.array([1, 0])}}})
    d = write_lmeval_run(tmp_path, "org/b", {"boolq": {"none": {"acc": np.array([1, 1])}}})
    (d / f"samples_boolq_{DATE}.jsonl").write_text("")
    with pytest.raises(InputError, match=r"samples_boolq_.*no logged sample: nothing to compare"):
        read_lmeval_tasks([tmp_path])


def test_model_name_from_model_args_given_as_a_dict(tmp_path):
    # simple_evaluate(model_args={...}) keeps the dict in results["config"]["model_args"]; peft before pretrained,
    # as EvaluationTracker's own order has it
    for model, args in (
        ("org/a", {"pretrained": "org/a", "dtype": "float32"}),
        ("org/b", {"pretrained": "org/base", "peft": "org/b"}),
    ):
        d = write_lmeval_run(tmp_path, model, {"boolq": {"none": {"acc": np.array([1, 0])}}}, model_name=False)
        res = d / f"results_{DATE}.json"
        data = json.loads(res.read_text())
        data["config"]["model_args"] = args
        res.write_text(json.dumps(data))
    found = find_lmeval_runs([tmp_path])
    runs, _ = found.runs, found.notes
    assert sorted(r.model for r in runs) == ["org/a", "org/b"]


def test_two_runs_of_one_model_compare_through_labels(tmp_path, cli):
    # lm_eval run twice into one --output_path (0-shot, then 2-shot): the directory keeps the latest run
    # per task, so one model is found; labelling each results file compares the two runs paired by doc_id
    rng = np.random.default_rng(11)
    zero = _gsm8k_scores(rng, 80, 0.4)
    two = np.where(rng.random(80) < 0.7, zero, 1)  # 2-shot fixes some items
    d0 = write_lmeval_run(tmp_path / "out", "org/base-1b", {"gsm8k": {"strict-match": {"exact_match": zero}}})
    write_lmeval_run(
        tmp_path / "out", "org/base-1b", {"gsm8k": {"strict-match": {"exact_match": two}}}, date="2026-12-01T09-00-00"
    )
    res = cli("stats", "table", "--from", "lm-eval", str(tmp_path / "out"))
    assert res.exit_code == 2 and "a comparison needs two" in res.stderr and "NAME=PATH" in res.stderr
    r0, r2 = d0 / f"results_{DATE}.json", d0 / "results_2026-12-01T09-00-00.json"
    res = cli("stats", "table", "--from", "lm-eval", "-l", f"0-shot={r0}", "-l", f"2-shot={r2}", "--json")
    assert res.exit_code == 0, res.stderr
    (tb,) = json.loads(res.stdout)["result"]["tables"]
    assert [m["model"] for m in tb["models"]] == ["0-shot", "2-shot"]
    c = tb["comparisons"][0]["comparison"]
    from statsmodels.stats.contingency_tables import mcnemar

    b01, b10 = int(np.sum((two == 1) & (zero == 0))), int(np.sum((two == 0) & (zero == 1)))
    ref = mcnemar([[0, b01], [b10, 0]], exact=b01 + b10 <= 25, correction=True).pvalue
    assert c["paired"] and c["n_common"] == 80
    assert c["delta"] == pytest.approx(two.mean() - zero.mean(), abs=1e-12)  # B - A: 2-shot minus the baseline
    assert c["p_value"] == pytest.approx(ref, rel=1e-9)  # statsmodels mcnemar, as in the test above


def test_a_label_selector_picks_the_filter_of_each_run(two_models, cli):
    _, dirs, truth = two_models
    base = str(dirs[0] / "org__base-1b")
    res = cli(
        "stats", "table", "--from", "lm-eval", "-l", f"strict={base}:strict-match",
        "-l", f"flex={base}:flexible-extract", "--task", "gsm8k", "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr
    (tb,) = json.loads(res.stdout)["result"]["tables"]
    strict, flex = (m["score"] for m in tb["models"])
    assert strict == pytest.approx(truth["gsm8k"][0].mean()) and flex == pytest.approx(truth["flex"][0].mean())
    res = cli("stats", "table", "--from", "lm-eval", "-l", f"a={base}", "-l", f"a={base}")
    assert res.exit_code == 2 and "label 'a' is given twice" in res.stderr
    res = cli("stats", "table", "--from", "lm-eval", "-l", f"a={dirs[0].parent}", "-l", f"b={base}")
    assert res.exit_code == 2 and "holds 2 models" in res.stderr


def test_limit_runs_pair_on_the_shared_docs_and_say_what_was_dropped(tmp_path, cli):
    # lm_eval --limit 60 for one model and the full 80 for the other: pair on the 60 shared doc_ids
    rng = np.random.default_rng(3)
    full = _gsm8k_scores(rng, 80, 0.5)
    part = _gsm8k_scores(rng, 60, 0.5)
    write_lmeval_run(tmp_path / "a", "org/a", {"gsm8k": {"strict-match": {"exact_match": full}}})
    write_lmeval_run(tmp_path / "b", "org/b", {"gsm8k": {"strict-match": {"exact_match": part}}})
    res = cli("stats", "table", "--from", "lm-eval", str(tmp_path / "a"), str(tmp_path / "b"), "--json")
    assert res.exit_code == 0, res.stderr
    (tb,) = json.loads(res.stdout)["result"]["tables"]
    c = tb["comparisons"][0]["comparison"]
    assert c["paired"] and c["n_common"] == 60
    assert c["delta"] == pytest.approx(part.mean() - full[:60].mean(), abs=1e-12)
    assert any("dropped 20 of 80 items only in org/a and 0 of 60 only in org/b" in n for n in tb["notes"])
    res = cli("stats", "table", "--from", "lm-eval", str(tmp_path / "a"), str(tmp_path / "b"), "--unpaired", "--json")
    c = json.loads(res.stdout)["result"]["tables"][0]["comparisons"][0]["comparison"]
    assert not c["paired"] and (c["n_a"], c["n_b"]) == (60, 80)


def test_a_nan_item_score_as_lm_eval_writes_it_is_left_out_naming_file_and_line(tmp_path):
    rng = np.random.default_rng(5)
    a, b = _gsm8k_scores(rng, 40, 0.5), _gsm8k_scores(rng, 40, 0.5)
    write_lmeval_run(tmp_path / "a", "org/a", {"gsm8k": {"none": {"exact_match": a}}})
    db = write_lmeval_run(tmp_path / "b", "org/b", {"gsm8k": {"none": {"exact_match": b}}})
    samples = db / f"samples_gsm8k_{DATE}.jsonl"
    lines = samples.read_text().splitlines()
    row = json.loads(lines[6])
    row["exact_match"] = float("nan")
    lines[6] = json.dumps(row)  # json.dumps writes NaN, as lm-eval's logger does
    assert "NaN" in lines[6]
    samples.write_text("\n".join(lines) + "\n")
    found = read_lmeval_tasks([tmp_path / "a", tmp_path / "b"])
    (t,) = found.tasks
    assert len(t.results.scores["org/b"]) == 39 and "6" not in t.results.scores["org/b"]
    assert any(f"is NaN at {samples}:7:" in n and "1 document(s) left out" in n for n in found.notes)
    tb = build_task_tables(list(found.tasks), source="lm-eval").tables[0]
    assert tb.comparisons[0].comparison.n_common == 39  # paired on the 39 shared documents


def test_samples_that_contradict_the_results_file_get_a_note(tmp_path):
    rng = np.random.default_rng(6)
    a, b = _gsm8k_scores(rng, 50, 0.5), _gsm8k_scores(rng, 50, 0.5)
    write_lmeval_run(tmp_path / "a", "org/a", {"gsm8k": {"none": {"exact_match": a}}})
    db = write_lmeval_run(tmp_path / "b", "org/b", {"gsm8k": {"none": {"exact_match": b}}})
    found = read_lmeval_tasks([tmp_path / "a", tmp_path / "b"])
    assert not any("disagrees" in n for n in found.notes)  # the writer's aggregate is the samples' mean
    res = db / f"results_{DATE}.json"
    data = json.loads(res.read_text())
    data["results"]["gsm8k"]["exact_match,none"] = 0.95
    res.write_text(json.dumps(data))
    found = read_lmeval_tasks([tmp_path / "a", tmp_path / "b"])
    (note,) = [n for n in found.notes if "disagrees" in n]
    assert note.startswith("org/b: gsm8k exact_match,none") and f"{b.mean():.4g}" in note and "0.95" in note
