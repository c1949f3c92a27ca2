"""The HTML report: the lab table, escaping, the machine section, results.json, and a real browser."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from headless import chrome

from expkit.labs.base import Lab, LabContext, LabOutput, Measurement, SeedFigure, Verdict
from expkit.labs.runner import run_labs

EVIL = "<script>alert('x')</script>"


def _evil_lab() -> Lab:
    seed = SeedFigure("v", "value", 1.0, "units", "1.0 units <seed>")

    def run(ctx: LabContext) -> LabOutput:
        from expkit.render.figures import new_figure, save_figure

        fig, (ax,) = new_figure()
        ax.plot([1, 2, 3], [1, 4, 9])
        path = save_figure(fig, ctx.figure_path("plot.png"))
        m = Measurement("v", f"label {EVIL}", 1.02, "units", Verdict("reproduced"), seed, detail=f"config {EVIL}")
        return LabOutput(measurements=(m,), explanation=f"first paragraph {EVIL}\n\nsecond & last", figures=(path,))

    return Lab(id="Z1.1", title=f"title {EVIL}", claims=("Z1.1",), seed_figures=(seed,), run=run)


@pytest.fixture
def report_dir(tmp_path) -> Path:
    run_labs([_evil_lab()], out_dir=tmp_path, quick=True)
    return tmp_path


def test_every_string_is_escaped(report_dir):
    html = (report_dir / "index.html").read_text()
    assert "<script" not in html.lower()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    assert "second &amp; last" in html and "1.0 units &lt;seed&gt;" in html


def test_report_has_claim_table_lab_section_and_machine(report_dir):
    html = (report_dir / "index.html").read_text()
    assert "Claims: seed figure vs measured here" in html
    assert "a simulation from assumed inputs" in html and "marked beside its value" in html  # what 'computed' is
    assert '<a href="#lab-Z1.1">Z1.1</a>' in html and 'id="lab-Z1.1"' in html
    assert "1.02 units" in html and 'class="v-reproduced"' in html
    for key in ("CPU", "cores (logical / physical)", "RAM", "OS", "Python", "torch", "GPU", "expkit"):
        assert f"<th>{key}</th>" in html
    assert '<img src="figures/Z1.1/plot.png"' in html
    assert "http://" not in html and "https://" not in html  # self-contained: nothing fetched


def test_results_json_holds_the_same_data(report_dir):
    data = json.loads((report_dir / "results.json").read_text())
    (r,) = data["results"]
    assert r["id"] == "Z1.1" and r["measurements"][0]["label"] == f"label {EVIL}"
    assert r["measurements"][0]["verdict"] == {"kind": "reproduced", "reason": None}
    assert data["machine"]["cpu_cores_logical"] >= 1


@pytest.mark.browser
def test_report_renders_in_a_real_browser(report_dir):
    browser = chrome()
    try:
        browser.get((report_dir / "index.html").as_uri())
        assert browser.title == "expkit lab report"
        # the injected markup is shown as text and never became an element
        assert browser.execute_script("return document.getElementsByTagName('script').length") == 0
        body = browser.find_element("tag name", "body").text
        assert f"label {EVIL}" in body and f"title {EVIL}" in body
        images = browser.execute_script("return Array.from(document.images).map(i => [i.complete, i.naturalWidth])")
        assert images and all(done and width > 100 for done, width in images), images
        rows = browser.execute_script(
            "return Array.from(document.querySelectorAll('table'))"
            ".find(t => t.rows[0].cells[0].textContent === 'figure').rows.length"
        )
        assert rows == 2  # header + one measurement row
    finally:
        browser.quit()


def test_a_supporting_figure_without_verdict_renders_as_dash(report_dir, tmp_path):
    from expkit.labs.runner import run_lab

    lab = _evil_lab()

    def run(ctx):
        return LabOutput(measurements=(Measurement("n", "items needed", 769, "items"),), explanation="")

    res = run_lab(replace(lab, run=run), out_dir=tmp_path / "o", quick=True)
    assert res.status == "ok"
    from expkit.render.report import _lab_section

    html = _lab_section(res).replace(' class="num"', "")
    assert "<td>items needed</td><td>769 items</td><td>-</td><td>-</td>" in html


def test_summary_folds_long_reasons_and_clips_long_values():
    from expkit.labs.base import LabResult
    from expkit.render.report import _summary_rows

    reason = "this CPU lists avx512_bf16, so oneDNN has native bf16 kernels for the matmuls " * 2
    m = Measurement("x", "chain", "a -> b -> " * 20, "", Verdict("differs", reason))
    r = LabResult(id="Z", title="t", claims=("Z",), status="ok", budget="quick", elapsed_s=0.1, measurements=(m,))
    (row,) = _summary_rows((r,))
    assert f'<details><summary><span class="v-differs">differs</span>: why</summary>{reason}</details>' in row
    assert "\u2026</td>" in row and ("a -&gt; b -&gt; " * 20) not in row
