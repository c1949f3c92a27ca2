"""Lab C1.1 measures list vs generator peak memory in fresh interpreters."""

from __future__ import annotations

from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


def test_c1_1_list_grows_generator_stays_flat(tmp_path):
    (lab,) = select_labs(["C1.1"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    assert res.status == "ok", res.error
    m = {x.key: x for x in res.measurements}
    # short records: a dict + small strs per line cost several times the bytes on disk
    assert 2.5 < m["list_ratio"].value < 9
    assert 1.0 < m["list_ratio_chat"].value < m["list_ratio"].value  # long strings cost ~1 byte/char
    assert 0 <= m["generator_peak"].value < 5  # MB above the interpreter's baseline
    assert 0.9 < m["generator_flat"].value <= 1.2
    assert m["list_peak_largest"].value > 1.5 * m["list_ratio"].value * 4.8  # 2x file: the list doubles
    assert (tmp_path / res.figures[0]).stat().st_size > 10_000
