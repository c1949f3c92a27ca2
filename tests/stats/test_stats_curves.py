"""Curve aggregation: debiased EMA, t-bands against scipy, Welch difference, file reading errors."""

from __future__ import annotations

import numpy as np
import pytest

from expkit.errors import InputError, UsageError
from expkit.stats.curves import Curve, aggregate_band, debiased_ema, difference_band, load_curves, summarize_curves


def _curve(run, group, ys, xs=None):
    ys = np.asarray(ys, dtype=float)
    xs = np.arange(1, ys.size + 1, dtype=float) if xs is None else np.asarray(xs, dtype=float)
    return Curve(run, group, xs, ys, "test")


def test_debiased_ema_by_hand():
    # m1 = 0.1*4 = 0.4 -> 0.4/0.1 = 4; m2 = 0.9*0.4 + 0.1*2 = 0.56 -> 0.56/0.19 = 2.947368...
    out = debiased_ema(np.array([4.0, 2.0]), 0.9)
    assert out.tolist() == pytest.approx([4.0, 0.56 / 0.19], rel=1e-12)
    assert debiased_ema(np.array([3.0, 1.0]), 0.0).tolist() == [3.0, 1.0]
    with pytest.raises(UsageError, match=r"ema 1.0 must be in \[0, 1\)"):
        debiased_ema(np.array([1.0]), 1.0)


def test_band_is_the_t_interval_at_each_x():
    from scipy import stats

    ys = [[1.0, 2.0], [1.2, 2.4], [0.9, 2.1]]
    band = aggregate_band([_curve(f"s{i}", "g", y) for i, y in enumerate(ys)])
    col = np.array(ys)[:, 1]
    lo, hi = stats.t.interval(0.95, 2, loc=col.mean(), scale=stats.sem(col))
    assert band.low[1] == pytest.approx(lo, rel=1e-12) and band.high[1] == pytest.approx(hi, rel=1e-12)
    assert band.n_seeds == 3


def test_difference_is_welch_and_nonoverlap_implies_exclusion():
    from scipy import stats

    a = [[1.0, 2.0, 3.0], [1.1, 2.1, 3.3], [0.9, 1.9, 3.1]]
    b = [[1.0, 2.6, 3.1], [1.2, 2.7, 3.4], [1.1, 2.5, 2.9], [0.9, 2.8, 3.0]]
    d = difference_band(
        [_curve(f"a{i}", "a", y) for i, y in enumerate(a)], [_curve(f"b{i}", "b", y) for i, y in enumerate(b)]
    )
    ref = stats.ttest_ind(np.array(a)[:, 1], np.array(b)[:, 1], equal_var=False).confidence_interval(0.95)
    assert (d.low[1], d.high[1]) == pytest.approx((ref.low, ref.high), rel=1e-9)
    assert bool(d.excludes_zero[1]) and not bool(d.excludes_zero[0])
    assert np.all(d.excludes_zero[~d.bands_overlap])


def test_misaligned_x_is_interpolated_on_the_shared_range():
    c1 = _curve("s1", "g", [4.0, 3.0, 2.0, 1.0], xs=[0, 10, 20, 30])
    c2 = _curve("s2", "g", [4.0, 3.0, 2.0], xs=[5, 15, 25])
    band = aggregate_band([c1, c2])
    assert band.x.min() >= 5 and band.x.max() <= 25
    # at x = 10: s1 has 3.0; s2 interpolates (5, 4.0)-(15, 3.0) to 3.5; the mean is 3.25
    assert band.mean[band.x == 10][0] == pytest.approx(3.25)


def test_summary_groups_and_notes():
    cs = summarize_curves(
        [_curve("a", "x", [1, 2]), _curve("b", "y", [1, 3]), _curve("c", "y", [1, 2])], metric="loss", x_key="step"
    )
    assert cs.difference is None and any("1 seed, no band" in n for n in cs.notes)
    with pytest.raises(UsageError, match=r"the difference names group 'z'"):
        summarize_curves([_curve("a", "x", [1, 2])], metric="loss", x_key="step", compare=("x", "z"))


def test_file_errors_name_the_line(tmp_path):
    f = tmp_path / "m.jsonl"
    f.write_text('{"step": 1, "loss": 2.0}\n{"step": 2, "loss": "x"}\n')
    with pytest.raises(InputError, match=r"m.jsonl:2: loss 'x' is not a number"):
        load_curves([f])
    f.write_text('{"step": 1, "loss": 2.0}\n{"loss": 1.0}\n')
    with pytest.raises(InputError, match=r"m.jsonl:2: a 'loss' value without any of step"):
        load_curves([f])
    with pytest.raises(UsageError, match=r"x 'epoch' is not known"):
        load_curves([f], x="epoch")


def test_rows_of_other_metrics_are_skipped(tmp_path):
    f = tmp_path / "m.jsonl"
    f.write_text('{"step": 1, "loss": 2.0}\n{"step": 1, "lr": 0.1}\n{"step": 2, "loss": 1.5}\n')
    (c,) = load_curves([f])
    assert c.x.tolist() == [1.0, 2.0] and c.y.tolist() == [2.0, 1.5]


def test_issue15_a_repeated_step_is_refused_naming_both_lines(tmp_path):
    # issue 15: duplicate (run, step) rows used to overwrite silently (the last value won)
    f = tmp_path / "m.jsonl"
    f.write_text(
        '{"step": 1, "loss": 2.0}\n{"step": 1, "lr": 0.1}\n{"step": 2, "loss": 1.5}\n{"step": 2, "loss": 1.4}\n'
    )
    with pytest.raises(InputError, match=r"m\.jsonl:4: run 'm' has 'loss' at step 2 twice \(first on line 3\)"):
        load_curves([f])


def test_issue15_long_format_groups_sharing_seeds_stay_apart(tmp_path):
    # issue 15: a run was keyed by file and seed only, so lr=0.1 seed 0 and lr=0.2 seed 0 merged
    f = tmp_path / "long.csv"
    rows = ["group,seed,step,loss"]
    for g, base in (("lr0.1", 1.0), ("lr0.2", 2.0)):
        for seed in (0, 1):
            rows += [f"{g},{seed},{step},{base + seed / 10 - step / 100}" for step in (1, 2, 3)]
    f.write_text("\n".join(rows) + "\n")
    curves = load_curves([f])
    assert sorted(c.run for c in curves) == [
        "long:lr0.1:seed=0",
        "long:lr0.1:seed=1",
        "long:lr0.2:seed=0",
        "long:lr0.2:seed=1",
    ]
    by_run = {c.run: c for c in curves}
    assert by_run["long:lr0.2:seed=0"].group == "lr0.2"
    assert by_run["long:lr0.2:seed=0"].y.tolist() == [1.99, 1.98, 1.97]
    cs = summarize_curves(curves, metric="loss", x_key="step")
    assert [b.n_seeds for b in cs.bands] == [2, 2]


def test_issue15_csv_with_a_bom_and_a_non_utf8_csv(tmp_path):
    ok = tmp_path / "excel.csv"
    ok.write_bytes(b"\xef\xbb\xbfstep,loss\r\n1,2.0\r\n2,1.5\r\n")
    (c,) = load_curves([ok])
    assert c.y.tolist() == [2.0, 1.5]
    bad = tmp_path / "latin1.csv"
    bad.write_bytes("step,loss,note\n1,2.0,ok\n2,1.5,caf\u00e9\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"latin1\.csv:3:.*not UTF-8: byte 0xe9"):
        load_curves([bad])


def test_per_rank_rows_of_a_torchrun_run_give_rank_0s_curve(tmp_path):
    f = tmp_path / "metrics.jsonl"
    rows = (f'{{"step": {s}, "loss": {2.0 - s / 10 + r}, "rank": {r}}}\n' for s in (1, 2, 3) for r in (0, 1))
    f.write_text("".join(rows))
    (c,) = load_curves([f])
    assert c.x.tolist() == [1.0, 2.0, 3.0] and c.y.tolist() == pytest.approx([1.9, 1.8, 1.7])


def test_a_run_whose_metrics_link_out_of_its_folder_is_not_followed(tmp_path):
    # hostile round five (issue 36): a store from elsewhere with metrics.jsonl -> a file outside the run folder;
    # plot curves quoted that file's first line in its parse error
    secret = tmp_path / "secret.txt"
    secret.write_text("root:$6$hash:19000:0:99999:7:::\n")
    run = tmp_path / "store" / "r1"
    run.mkdir(parents=True)
    (run / "metrics.jsonl").symlink_to(secret)
    with pytest.raises(InputError, match="leaves its run directory") as err:
        load_curves([run], metric="loss")
    assert "root:" not in str(err.value)
    inside = tmp_path / "store" / "r2"
    inside.mkdir()
    (inside / "m.jsonl").write_text('{"step": 1, "loss": 2.0}\n{"step": 2, "loss": 1.0}\n')
    (inside / "metrics.jsonl").symlink_to(inside / "m.jsonl")  # a link inside the folder is read as before
    assert [c.y.tolist() for c in load_curves([inside], metric="loss")] == [[2.0, 1.0]]
