"""The eval-reader registry: the built-in readers, and a new one picked up by ``stats table`` untouched."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from expkit.errors import UsageError
from expkit.integrations import readers
from expkit.integrations.readers import EvalItems, EvalQuery, read_eval_items, register_reader
from expkit.stats.tables import ItemResults, TaskResults


@pytest.fixture
def registry(monkeypatch):
    """A copy of the registry for one test, so a reader registered here does not leak into the others."""
    monkeypatch.setattr(readers, "_READERS", dict(readers.eval_readers()))


@dataclass(frozen=True)
class TsvScoresReader:
    """A made-up harness: ``model<TAB>item<TAB>correct`` lines, one file per task named TASK.scores."""

    name: str = "tsv-scores"
    description: str = "tsv-scores: TASK.scores files of model, item, correct (tab-separated)"
    accepts: frozenset[str] = frozenset({"tasks"})

    def sniff(self, path: Path) -> bool:
        return path.suffix == ".scores"

    def read(self, paths: Sequence[Path], query: EvalQuery) -> EvalItems:
        tasks = []
        for p in paths:
            scores: dict[str, dict[str, float]] = {}
            for line in p.read_text().splitlines():
                model, item, correct = line.split("\t")
                scores.setdefault(model, {})[item] = float(correct)
            n = sum(map(len, scores.values()))
            tasks.append(TaskResults(p.stem, ItemResults(str(p), tuple(scores), scores, None, n), (str(p),)))
        chosen = [t for t in tasks if query.tasks is None or t.task in query.tasks]
        return EvalItems(tuple(chosen), (f"read {len(paths)} .scores files",))


def _scores_file(path: Path, base_correct: int, tuned_correct: int, n: int = 40) -> Path:
    rows = [f"base\tq{i}\t{int(i < base_correct)}" for i in range(n)]
    rows += [f"tuned\tq{i}\t{int(i < tuned_correct)}" for i in range(n)]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_builtin_readers_are_registered_in_order():
    assert list(readers.eval_readers())[:3] == ["items", "lm-eval", "inspect"]
    assert readers.eval_reader("inspect").sniff(Path("logs/a.eval"))
    assert not readers.eval_reader("inspect").sniff(Path("a.jsonl"))
    with pytest.raises(UsageError, match=r"no eval reader is called 'nope'.*"):
        readers.eval_reader("nope")


def test_a_query_choice_the_reader_does_not_take_is_refused(tmp_path):
    f = tmp_path / "r.jsonl"
    f.write_text('{"model": "a", "item": "1", "score": 1}\n')
    with pytest.raises(UsageError, match=r"a metric choice applies to lm-eval or inspect, not to items"):
        read_eval_items("items", [f], EvalQuery(metric="acc"))


def test_a_second_reader_with_a_taken_name_is_refused(registry):
    with pytest.raises(UsageError, match=r"'inspect' is already registered"):
        register_reader(TsvScoresReader(name="inspect"))


def test_a_new_reader_is_picked_up_by_stats_table_without_touching_the_cli(cli, registry, tmp_path):
    register_reader(TsvScoresReader())
    math_file = _scores_file(tmp_path / "math.scores", base_correct=10, tuned_correct=30)
    code_file = _scores_file(tmp_path / "code.scores", base_correct=20, tuned_correct=21)

    res = cli("stats", "table", "--from", "tsv-scores", str(math_file), str(code_file), "--json")
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)["result"]
    assert out["source"] == "tsv-scores" and out["baseline"] == "base"
    assert [t["task"] for t in out["tables"]] == ["math", "code"]
    by_task = {t["task"]: {m["model"]: m["score"] for m in t["models"]} for t in out["tables"]}
    assert by_task["math"] == {"base": 0.25, "tuned": 0.75}  # 10/40 and 30/40
    assert "read 2 .scores files" in out["notes"]

    # its query choices come from the reader: --task is taken, --metric is refused naming who takes it
    res = cli("stats", "table", "--from", "tsv-scores", str(math_file), str(code_file), "--task", "code", "--json")
    assert res.exit_code == 0 and [t["task"] for t in json.loads(res.stdout)["result"]["tables"]] == ["code"]
    res = cli("stats", "table", "--from", "tsv-scores", str(math_file), "--metric", "acc")
    assert res.exit_code == 2 and "--metric applies to --from lm-eval or --from inspect" in res.stderr


def test_an_unknown_reader_lists_the_registered_ones(cli, registry, tmp_path):
    register_reader(TsvScoresReader())
    res = cli("stats", "table", "--from", "nope", str(tmp_path / "x"))
    assert res.exit_code == 2 and "items, lm-eval, inspect, mmlu-pro, tsv-scores" in res.stderr


def test_stats_table_help_lists_the_builtin_readers(cli):
    res = cli("stats", "table", "--help")
    assert res.exit_code == 0
    text = " ".join(res.stdout.split())
    for name in ("items:", "lm-eval:", "inspect:"):
        assert name in text
