"""``expkit ui`` served by a real uvicorn on loopback: read-only (405), nothing outside the store and the
package's assets served whatever the URL's encoding, every value from a run escaped, the runs table paged
on the server with only the config keys that differ, curves decimated and read incrementally (issue 37)."""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from uiserver import EVIL_KEY, EVIL_METRIC, EVIL_SCRIPT, write_store

from expkit.ui import UiConfig
from expkit.ui.downsample import decimate_minmax
from expkit.ui.series import SeriesCache


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "runs"
    return root, write_store(root)


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
@pytest.mark.parametrize("path", ["/runs", "/api/runs", "/assets/ui.js", "/nowhere"])
def test_only_get_and_head(make_server, store, method, path):
    srv = make_server(UiConfig(store=store[0]))
    status, body = srv.request(path, method=method)
    assert status == 405 and b"read-only" in body
    assert srv.request("/runs", method="HEAD")[0] == 200


# paths that try to leave the store or the package's assets, in several encodings
TRAVERSALS = [
    "/assets/..%2fserver.py",
    "/assets/%2e%2e%2fserver.py",
    "/assets/%252e%252e%252fserver.py",
    "/assets/..%5cserver.py",
    "/assets/ui.js%00.py",
    "/assets/templates%2fbase.html",
    "/run/..%2f..%2fetc%2fpasswd",
    "/run/%2e%2e",
    "/run/..",
    "/api/run/..%2frun.json/series?metric=loss",
    "/labs/figure/..~..~..~etc~passwd",
    "/labs/figure/%2fetc%2fpasswd",
    "/sweep/..%2f..%2fetc%2fpasswd",
    "//etc/passwd",
    "/%2e%2e/%2e%2e/etc/passwd",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_nothing_outside_the_store_or_the_assets_is_served(make_server, store, tmp_path, path):
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "results.json").write_text(json.dumps({"results": []}))
    srv = make_server(UiConfig(store=store[0], report=tmp_path / "report"))
    status, body = srv.get(path)
    assert status in (400, 404), (path, status)
    assert b"root:" not in body and b"def create_app" not in body and b"{% block" not in body


def test_assets_are_served_by_name(make_server, store):
    srv = make_server(UiConfig(store=store[0]))
    status, body = srv.get("/assets/uPlot.iife.min.js")
    assert status == 200 and b"uPlot" in body


@pytest.mark.parametrize("page", ["/runs", "/run/evil", "/compare?a=evil&b=grid", "/sweeps"])
def test_values_from_runs_are_escaped(make_server, store, page):
    srv = make_server(UiConfig(store=store[0]))
    status, body = srv.get(page)
    text = body.decode()
    assert status in (200, 400), text[:500]
    for evil in (EVIL_SCRIPT, EVIL_KEY, EVIL_METRIC):
        assert evil not in text  # never raw: escaped as &lt; in HTML and \u003c in JSON data blocks


def test_run_page_shows_the_escaped_values(make_server, store):
    srv = make_server(UiConfig(store=store[0]))
    text = srv.get("/run/evil")[1].decode()
    assert "&lt;script&gt;" in text or "\\u003cscript\\u003e" in text
    status, body = srv.get(f"/api/run/evil/series?metric={urllib.parse.quote(EVIL_METRIC)}")
    assert status == 200 and json.loads(body)["y"] == [1.0]  # JSON carries the value; the page sets textContent


def test_runs_api_pages_sorts_and_shows_only_differing_keys(make_server, store):
    root, _ = store
    srv = make_server(UiConfig(store=root))
    page = json.loads(srv.get("/api/runs?where=group=grid&sort=config.lr&desc=0&limit=3")[1])
    assert page["total"] == 4 and len(page["rows"]) == 3 and page["offset"] == 0
    assert page["config_columns"] == ["lr", "training_args.learning_rate"]  # bs and warmup are the same
    assert [r["config"]["lr"] for r in page["rows"]] == [0.1, 0.1, 0.3]
    second = json.loads(srv.get("/api/runs?where=group=grid&sort=config.lr&desc=0&limit=3&offset=3")[1])
    assert [r["config"]["lr"] for r in second["rows"]] == [0.3]
    by_loss = json.loads(srv.get("/api/runs?where=group=grid&sort=metric.loss&desc=0")[1])
    losses = [r["metrics"]["loss"] for r in by_loss["rows"]]
    assert losses == sorted(losses)
    status, body = srv.get("/api/runs?limit=100000")
    assert status == 400 and "limit" in json.loads(body)["error"]


def test_a_bad_filter_is_a_400_naming_it(make_server, store):
    srv = make_server(UiConfig(store=store[0]))
    status, body = srv.get("/api/runs?where=nonsense")
    assert status == 400 and "nonsense" in json.loads(body)["error"]


def test_series_reads_appended_lines_only_and_waits_for_a_torn_line(tmp_path):
    run = tmp_path / "r1"
    run.mkdir()
    f = run / "metrics.jsonl"
    f.write_text('{"step": 1, "loss": 3.0}\n{"step": 2, "loss": 2.0}\n{"step": 3, "lo')
    cache = SeriesCache()
    s = cache.series(run, "loss", buckets=100)
    assert (s.x, s.y, s.n_points) == ([1.0, 2.0], [3.0, 2.0], 2)
    with f.open("a") as out:
        out.write('ss": 1.5}\n{"step": 3, "loss": 1.25, "eval_loss": 9.0}\n')
    s = cache.series(run, "loss", buckets=100)
    assert s.x == [1.0, 2.0, 3.0] and s.y == [3.0, 2.0, 1.25]  # step 3 twice: the last value is kept
    assert s.repeated_steps == 1 and s.metrics == ("loss", "eval_loss")


def test_series_reads_afresh_when_the_file_is_replaced(tmp_path):
    run = tmp_path / "r1"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"step": 1, "loss": 3.0}\n{"step": 2, "loss": 2.0}\n')
    cache = SeriesCache()
    assert cache.series(run, "loss", buckets=10).n_points == 2
    (run / "metrics.jsonl").write_text('{"step": 1, "loss": 7.0}\n')
    assert cache.series(run, "loss", buckets=10).y == [7.0]


@settings(max_examples=60, deadline=None)
@given(
    ys=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=3000),
    buckets=st.integers(1, 200),
    nans=st.lists(st.integers(0, 2999), max_size=5),
)
def test_decimation_keeps_the_extremes_and_marks_where_the_curve_breaks(ys, buckets, nans):
    y = np.array(ys)
    x = np.arange(y.size, dtype=float)
    for i in nans:
        if i < y.size:
            y[i] = np.nan
    d = decimate_minmax(x, y, buckets=buckets)
    assert np.all(np.diff(d.x) > 0)  # step order, no point twice
    finite = np.isfinite(y)
    if finite.any():  # the global extremes of the finite points survive
        assert np.nanmin(d.y) == y[finite].min() and np.nanmax(d.y) == y[finite].max()
    runs_of_nan = int((~finite & ~np.concatenate([[False], ~finite[:-1]])).sum())
    if y.size > 2 * buckets:
        assert d.n_out <= 2 * buckets + runs_of_nan
        starts = np.flatnonzero(~finite & ~np.concatenate([[False], ~finite[:-1]]))
        assert set(starts.tolist()) <= set(d.x.astype(int).tolist())  # every break is shown
    else:
        assert d.n_out == y.size


def test_a_one_step_spike_in_a_million_points_survives():
    y = np.linspace(2.0, 1.0, 1_000_000)
    y[654_321] = 50.0  # a divergence spike of one step
    d = decimate_minmax(np.arange(y.size, dtype=float), y, buckets=1000)
    assert d.n_out <= 2000 and 654_321.0 in d.x.tolist() and d.y.max() == 50.0


def test_labs_page_has_contents_counts_linked_and_figures_first(make_server, store, tmp_path):
    report = tmp_path / "report"
    (report / "figures" / "Z1").mkdir(parents=True)
    (report / "figures" / "Z1" / "f.png").write_bytes(b"\x89PNG\r\n\x1a\nfake")
    result = {
        "id": "Z1",
        "title": "a lab <b>bold</b>",
        "claims": ["Z1"],
        "status": "ok",
        "figures": ["figures/Z1/f.png"],
        "measurements": [{"label": "x", "value": 1.5, "unit": "s", "verdict": {"kind": "reproduced", "reason": None}}],
    }
    (report / "results.json").write_text(json.dumps({"expkit_version": "t", "results": [result]}))
    srv = make_server(UiConfig(store=store[0], report=report))
    text = srv.get("/labs")[1].decode()
    assert 'href="#lab-Z1"' in text and "1 reproduced" in text and "&lt;b&gt;bold" in text
    assert text.index("<img") < text.index("<table", text.index('id="lab-Z1"'))  # figures before the table
    status, body = srv.get("/labs/figure/figures~Z1~f.png")
    assert status == 200 and body.startswith(b"\x89PNG")


def test_ui_refuses_a_public_host_without_expose(cli, tmp_path):
    res = cli("ui", "--store", str(tmp_path), "--host", "0.0.0.0")
    assert res.exit_code == 2 and "--expose" in res.stderr


def test_the_kept_listing_sees_a_new_run_and_a_finished_one(tmp_path):
    import expkit.runs as runs
    from expkit.ui.views import ListingCache, RunsQuery, runs_page

    root = tmp_path / "runs"
    write_store(root)
    cache = ListingCache(ttl_s=3600)  # only the store's own changes can refresh it here
    assert runs_page(root, RunsQuery(), cache=cache).total == 5
    with runs.start(config={}, store=root, name="late", seed=0) as run:
        page = runs_page(root, RunsQuery(), cache=cache)
        assert page.total == 6 and page.running == 1
        run.log(1, loss=1.0)
    page = runs_page(root, RunsQuery(text="late"), cache=cache)
    assert page.total == 1 and page.rows[0]["status"] == "finished"


MMLU_PRO = Path(__file__).resolve().parents[3] / "shared" / "data" / "mmlu-pro"  # TIGER-AI-Lab/MMLU-Pro eval_results


def test_evals_page_ranks_published_outputs_and_lists_the_disagreements(make_server, store):
    """Three of MMLU-Pro's published per-question outputs (Apache-2.0, TIGER-AI-Lab/MMLU-Pro's eval_results),
    through `stats leaderboard`'s reader: the page's ranks are the library's, the disagreements are counted
    on the items both models answered."""
    from expkit.integrations.leaderboard_sources import LeaderboardRequest, build_leaderboard_from
    from expkit.ui.evals import EvalSources

    files = sorted(str(p) for p in MMLU_PRO.glob("model_outputs_*.json.gz"))[:3]
    if len(files) < 3:
        pytest.skip(f"the MMLU-Pro files are not at {MMLU_PRO}")
    srv = make_server(UiConfig(store=store[0], evals=EvalSources("leaderboard", tuple(files))))
    status, body = srv.get("/evals")
    text = body.decode()
    assert status == 200, text[:2000]
    board = build_leaderboard_from(LeaderboardRequest(paths=tuple(files)))
    for m in board.models:
        assert f"<td>{m.rank}</td><td>{m.name}</td>" in text
    assert 'id="disagree"' in text and "items both scored are scored differently" in text


def test_a_port_in_use_and_a_host_name_are_one_line_exit_2(cli, tmp_path):
    import socket

    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    try:
        res = cli("ui", "--store", str(tmp_path), "--port", str(held.getsockname()[1]))
        assert res.exit_code == 2 and "cannot listen on 127.0.0.1 port" in res.stderr
    finally:
        held.close()
    res = cli("ui", "--store", str(tmp_path), "--host", "example.invalid")  # no name is looked up
    assert res.exit_code == 2 and "not an IP address" in res.stderr


def test_a_log_or_metrics_linked_out_of_the_run_folder_is_not_served(tmp_path):
    # a store from elsewhere whose output.log and metrics.jsonl link to files outside their run (issue 36's
    # hostile round five found plot curves following such a link; the web view, which can be --expose'd, must not)
    import expkit.runs as runs
    from expkit.runs.store import find_run_dir
    from expkit.ui.views import run_page

    secret = tmp_path / "secret.txt"
    secret.write_text('{"step": 1, "loss": 42.0}\nroot:$6$hash:19000:0:99999:7:::\n')
    store = tmp_path / "store"
    with runs.start(config={"lr": 0.1}, seed=0, store=store, name="linked") as run:
        run.log(1, loss=1.0)
    run_dir = find_run_dir(store, "linked")
    for name in ("output.log", "metrics.jsonl"):
        (run_dir / name).unlink(missing_ok=True)
        (run_dir / name).symlink_to(secret)
    page = run_page(store, "linked")
    assert page.log_tail == "" and "root:" not in page.log_tail
    assert SeriesCache().series(run_dir, "loss", buckets=10).y == []
    (run_dir / "metrics.jsonl").unlink()
    (run_dir / "inside.jsonl").write_text('{"step": 1, "loss": 1.0}\n')
    (run_dir / "metrics.jsonl").symlink_to(run_dir / "inside.jsonl")  # a link inside the run still reads
    assert SeriesCache().series(run_dir, "loss", buckets=10).y == [1.0]
