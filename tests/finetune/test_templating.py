"""Render budgets on chat templates (issue 36): runaway loops and giant strings stop at a budget, named, in
seconds; real templates render as before. The hostile templates are generated from a few shapes x sizes."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import pytest

from expkit.finetune.templating import RenderBudget, TemplateBudgetExceeded, template_budget

# shapes of runaway templates: {n} is the loop size or the string length
_LOOPS = (
    "{{% for i in range({n}) %}}{{% for j in range({n}) %}}{{% endfor %}}{{% endfor %}}x",
    "{{% for i in range({n}) %}}{{% for j in range({n}) %}}{{{{ 'abc' }}}}{{% endfor %}}{{% endfor %}}",
    "{{% for i in range({n}) %}}{{% for j in range({n}) %}}{{% for k in range({n}) %}}{{% endfor %}}"
    "{{% endfor %}}{{% endfor %}}",
    "{{% set s = 'y' * 1000 %}}{{% for i in range({n}) %}}{{{{ s }}}}{{% endfor %}}",
)
_STRINGS = (
    "{{{{ 'x' * {n} }}}}",
    "{{% set s = 'ab' * {n} %}}{{{{ s }}}}",
    "{{{{ 'x' | center({n}) }}}}",
)
HOSTILE = [s.format(n=n) for s, n in itertools.product(_LOOPS, (100_000, 30_000))] + [
    s.format(n=n) for s, n in itertools.product(_STRINGS, (10**10, 10**9))
]


def _tokenizer(template: str):
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel({"a": 0, "<unk>": 1}, unk_token="<unk>")))
    tok.chat_template = template
    return tok


@pytest.mark.parametrize("template", HOSTILE)
def test_runaway_templates_stop_at_a_budget(template):
    tok = _tokenizer(template)
    with pytest.raises(TemplateBudgetExceeded, match=r"loop iterations|characters"), template_budget():
        tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False)


def test_a_loop_over_a_long_string_stops_at_the_time_budget():
    tok = _tokenizer("{% for c in ('x' * 10000000) %}{% for d in ('y' * 10000) %}{% endfor %}{% endfor %}")
    with pytest.raises(TemplateBudgetExceeded, match=r"within 0\.5 s"), template_budget(RenderBudget(seconds=0.5)):
        tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False)


def test_real_templates_render_the_same_under_the_budget():
    from families.catalog import conversations, families

    from expkit.finetune.conventions import render_template

    msgs = conversations()["multi-turn"]
    for fam in families()[:12]:
        try:
            plain = render_template(fam.template, msgs)
        except Exception:  # noqa: BLE001 - a family that cannot render this conversation: compared elsewhere
            continue
        with template_budget():
            assert render_template(fam.template, msgs) == plain, fam.name


def test_the_patch_is_removed_after_the_block():
    from transformers.utils import chat_template_utils as ctu

    before = ctu._compile_jinja_template
    with template_budget(), template_budget():
        assert ctu._compile_jinja_template is not before
    assert ctu._compile_jinja_template is before


def test_sft_audit_on_a_runaway_template_is_one_line_exit_2_as_a_real_process(tmp_path):
    """Before the budget: the nested loops never ended (the giant strings, in process below, hit a memory cap)."""
    tok = _tokenizer(HOSTILE[0])
    model = tmp_path / "model"
    tok.save_pretrained(model)
    data = tmp_path / "d.jsonl"
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    data.write_text(json.dumps({"messages": msgs}) + "\n")
    cmd = [sys.executable, "-m", "expkit", "sft", "audit", "--model", str(model), "--data", str(data)]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert res.returncode == 2, res.stderr
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert any("chat template" in x and ("iterations" in x or "characters" in x) for x in lines), res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize("template", [_STRINGS[0].format(n=10**10), _STRINGS[2].format(n=10**9)])
def test_sft_audit_on_a_giant_string_template_is_exit_2(template, tmp_path, cli):
    tok = _tokenizer(template)
    tok.save_pretrained(tmp_path / "model")
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}))
    res = cli("sft", "audit", "--model", str(tmp_path / "model"), "--data", str(data))
    assert res.exit_code == 2 and "characters" in res.stderr, res.stderr


def test_sft_audit_shows_escapes_and_nul_in_chat_and_template_text_as_text(tmp_path, cli):
    """Issue 36: an escape in the chat content (or the template's own text) retitled the terminal and landed in the
    --html page, and a NUL was printed. Each token is printed alone, so the check is per token, on a real render."""
    from expkit.finetune.demomodel import ensure_demo_model

    demo = ensure_demo_model(quick=True).path
    title, nul = "\x1b]0;pwned\x07", "\x00"
    msgs = [{"role": "user", "content": f"hi {title} there{nul}"}, {"role": "assistant", "content": f"ok{nul}\x1b[31m"}]
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"messages": msgs}) + "\n")
    page = tmp_path / "a.html"
    res = cli("sft", "audit", "--model", str(demo), "--data", str(data), "--show", "1", "--html", str(page))
    assert res.exit_code == 0, res.stderr
    for raw in ("\x1b", "\x00", "\x07"):
        assert raw not in res.stdout and raw not in page.read_text()
    assert "\\x1b" in res.stdout and "\\x00" in res.stdout and "\\x1b" in page.read_text()
