"""Lab C5.5: the masked fraction judged on the data set (not the first conversation), measured by the audit; the
same measurement on long-answer conversations flips both verdicts."""

from __future__ import annotations

import pytest
from verdict_checks import assert_flips, assert_verdicts_follow

from expkit.labs.lab_c5_5_masked_fraction import (
    FRACTION_RULE,
    answer_length_cause,
    measure_masked_share,
    mostly_masked_rule,
    with_answer_words,
)
from expkit.labs.registry import select_labs
from expkit.labs.runner import run_lab


@pytest.fixture(scope="module")
def chat():
    from expkit.finetune.chatdata import generate_chat_examples
    from expkit.finetune.demomodel import ensure_demo_model
    from expkit.finetune.labels import load_chat_tokenizer

    tok = load_chat_tokenizer(ensure_demo_model(quick=True).path)
    return tok, generate_chat_examples(n=60, seed=5)


def test_c5_5_masked_fraction_judged_on_the_data_set(tmp_path):
    (lab,) = select_labs(["C5.5"])
    res = run_lab(lab, out_dir=tmp_path, quick=True)
    m = assert_verdicts_follow(res)
    one, all_, no_sys = m["masked_one"].value, m["synthetic_masked_all"].value, m["masked_no_system"].value
    assert 50 < one < 100 and 50 < all_ < 100
    assert no_sys < all_  # dropping the system prompt leaves a larger share trained
    assert m["masked_one"].verdict is None  # one example is shown, not judged
    assert m["masked_all"].seed.value == 85.0
    # the sweep over answer lengths is measured: longer answers, less masked
    sweep = [m[f"masked_{w}w"].value for w in (1, 5, 20, 60, 200)]
    assert sweep == sorted(sweep, reverse=True) and sweep[-1] < 50 < sweep[0]
    # issue 36: judged on written conversations (mlflow's demo, reference answers), not on the generated ones whose
    # answers of a few words make the verdict hold; those are shown unjudged
    assert m["synthetic_mostly_masked"].value == 500 and m["synthetic_mostly_masked"].verdict is None
    assert m["synthetic_masked_all"].verdict is None and 50 < m["synthetic_masked_all"].value < 100
    written = m["mostly_masked"]
    if written.verdict.kind == "not measured here":  # mlflow not installed: no written data set here
        assert "mlflow" in written.verdict.reason
    else:
        assert "written reference answers" in written.label and "written reference answers" in m["masked_all"].label
        assert 0 < m["masked_all"].value < 100 and written.value <= written.rule.n
        if m["masked_all"].verdict.kind == "differs":
            assert "answer length" in m["masked_all"].verdict.reason
        # the contrary measurement: the same written conversations audited with one-word answers
        from expkit.finetune.demomodel import ensure_demo_model
        from expkit.finetune.labels import load_chat_tokenizer
        from expkit.labs.lab_c5_5_masked_fraction import shipped_chat

        tok = load_chat_tokenizer(ensure_demo_model(quick=True).path)
        terse = measure_masked_share(tok, with_answer_words(shipped_chat().reference, 1))
        if written.verdict.kind != "reproduced":
            assert_flips(written, terse.mostly_masked)
    # a shipped data set with written answers beside the synthetic sweep (or 'n/a' naming why there is none)
    shipped = [x for k, x in m.items() if k.startswith("masked_shipped")]
    assert shipped and all(x.verdict is None for x in shipped)
    if written.verdict.kind != "not measured here":  # the written set's figure is the judged masked_all
        assert m["masked_shipped_reference"].value == m["masked_all"].value
    assert "A real chat data set" in res.explanation or "No chat data set" in res.explanation


def test_c5_5_long_answers_flip_both_verdicts(chat):
    """The measurement run on conversations with 60-word answers (the reviewer measured 21% masked there): most
    of a conversation is then trained, so both rules fail; with the data's own short answers they hold."""
    tok, data = chat
    short = measure_masked_share(tok, data)
    long = measure_masked_share(tok, with_answer_words(data, 60))
    assert mostly_masked_rule(short.examples).judge(short.mostly_masked).kind == "reproduced"
    assert mostly_masked_rule(long.examples).judge(long.mostly_masked).kind == "not reproduced"
    assert long.masked_pct < 50 < short.masked_pct
    assert FRACTION_RULE.judge(long.masked_pct).kind == "not reproduced"


def test_c5_5_cause_comes_from_the_sweep_not_the_figure(chat):
    """The cause is the answer length at which a separate audit lands in the band; with no sweep point in the band,
    there is no cause and the verdict is 'not reproduced'."""
    tok, data = chat
    sweep = {w: measure_masked_share(tok, with_answer_words(data, w)) for w in (1, 5, 20, 60)}
    cause = answer_length_cause(sweep, data_words=1.0)
    inside = [w for w, s in sweep.items() if FRACTION_RULE.holds(s.masked_pct)]
    if inside:
        assert cause is not None and cause.unit == "words"
    else:
        assert cause is None
    only_long = {w: s for w, s in sweep.items() if w >= 60}
    assert answer_length_cause(only_long, data_words=1.0) is None


def test_c5_5_shipped_chat_data_is_audited_beside_the_sweep(chat):
    """mlflow's demo traces (the one chat data set with written answers in this environment) are audited with the
    same tokenizer: the longer improved answers leave less masked than the short reference answers; a session's
    turns are one conversation."""
    pytest.importorskip("mlflow")
    from expkit.labs.lab_c5_5_masked_fraction import shipped_chat, shipped_rows

    tok, _ = chat
    shipped = shipped_chat()
    assert shipped is not None and "mlflow/demo/data.py" in shipped.source
    assert len(shipped.reference) == len(shipped.improved) and any(len(e.messages) > 2 for e in shipped.reference)
    real = {
        "reference": measure_masked_share(tok, shipped.reference),
        "improved": measure_masked_share(tok, shipped.improved),
    }
    assert 0 < real["improved"].masked_pct < real["reference"].masked_pct < 100
    rows = shipped_rows(shipped, real)
    assert [r.key for r in rows] == ["masked_shipped_reference", "masked_shipped_improved"]
    assert all(r.verdict is None and "mlflow" in r.detail for r in rows)
    assert shipped_rows(None, None)[0].value == "n/a"
