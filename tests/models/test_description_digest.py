"""One description per config content: keyed by a digest, built once per command, summed over its layers."""

from __future__ import annotations

import json
import shutil
from collections import OrderedDict
from pathlib import Path

import pytest

import expkit.models.description as description
from expkit.memory import TrainingQuery, count_parameters
from expkit.memory.report import MemoryRequest, build_memory_report
from expkit.models import config_digest, describe_config, load_model_description

PUBLISHED = Path(__file__).parent / "published" / "configs"


@pytest.fixture
def describe_calls(monkeypatch):
    """An empty description cache and a counter of the descriptions actually built (``_describe`` calls)."""
    monkeypatch.setattr(description, "_DESCRIPTIONS", OrderedDict())
    calls: list[str] = []
    build = description._describe

    def counted(raw, *, name, source):  # noqa: ANN001, ANN202
        calls.append(name)
        return build(raw, name=name, source=source)

    monkeypatch.setattr(description, "_describe", counted)
    return calls


def test_one_mem_command_describes_its_model_once(describe_calls):
    # what `expkit mem qwen3-8b/ --json` runs (cli/mem.py): the description, then the report (ledger, counts)
    query = TrainingQuery(model=load_model_description(PUBLISHED / "qwen3-8b"))
    report = build_memory_report(MemoryRequest(training=query))
    assert report.ledger.total_params == report.parameters.total_params == 8_190_735_360  # Qwen3-8B, meta build
    build_memory_report(MemoryRequest(training=query, mode="infer", context=4096))
    assert describe_calls == ["qwen3-8b"]


@pytest.mark.parametrize(
    "args",
    [
        ("mem", "qwen2.5-0.5b", "--json"),
        ("mem", "qwen2.5-0.5b", "--mode", "infer", "--json"),
        ("roofline", "--model", "qwen2.5-0.5b", "--json"),
        ("sft", "params", "qwen2.5-0.5b", "--lora-r", "16", "--json"),
    ],
)
def test_each_model_command_describes_once(cli, describe_calls, args):
    res = cli(*args)
    assert res.exit_code == 0, res.stdout
    assert json.loads(res.stdout)["result"]
    assert describe_calls == ["qwen2.5-0.5b"]


def test_differently_named_copies_share_one_description(tmp_path, describe_calls):
    for name in ("mine", "theirs"):
        shutil.copytree(PUBLISHED / "whisper-large-v3", tmp_path / name)
    mine, theirs = load_model_description(tmp_path / "mine"), load_model_description(tmp_path / "theirs")
    assert describe_calls == ["mine"]  # the second copy is the first one's description
    assert mine.digest == theirs.digest and len(mine.digest) == 64
    assert (mine.name, theirs.name) == ("mine", "theirs")  # each keeps its own name and source
    assert mine.source != theirs.source
    assert mine.layers == theirs.layers and mine.encoder_layers == theirs.encoder_layers
    assert count_parameters(theirs).model == "theirs"
    assert count_parameters(mine).total_params == count_parameters(theirs).total_params


def test_the_digest_follows_the_content_not_the_key_order_or_bookkeeping():
    raw = json.loads((PUBLISHED / "qwen3-8b" / "config.json").read_text())
    shuffled = dict(reversed(list(raw.items())), _name_or_path="somewhere/else")
    assert config_digest(shuffled) == config_digest(raw)
    assert config_digest(dict(raw, num_hidden_layers=35)) != config_digest(raw)
    deeper = describe_config(dict(raw, num_hidden_layers=35), name="q", source="test")
    assert deeper.digest != load_model_description(PUBLISHED / "qwen3-8b").digest
    assert len(deeper.layers) == 35


def test_whole_model_figures_sum_over_the_layers():
    # DeepSeek-V3: 3 dense layers then 58 MoE layers; no figure is layer 0's times 61
    d = load_model_description("deepseek-v3")
    h = d.hidden_size
    by_layer = sum(layer.linear_params(h) for layer in d.layers)
    assert d.linear_params() == by_layer + d.head_params + d.extra_params
    assert d.linear_params() != 61 * d.layers[0].linear_params(h) + d.head_params
    assert d.active_linear_params() == sum(ly.active_linear_params(h) for ly in d.layers) + d.head_params
    assert d.matmul_io_per_token() == sum(ly.matmul_io_per_token(h) for ly in d.layers) + h + d.vocab_size
    assert d.largest_matmul_params() == h * 18432  # the dense layers' MLP, wider than an expert's 2048
    # the same model 2 layers deep keeps the first layer's kind
    two = d.with_layers(2)
    assert len(two.layers) == 2 and two.layers[0] == d.layers[0] and two.name == "deepseek-v3[2 layers]"
