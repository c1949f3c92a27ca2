"""The light install (no transformers) reads catalog entries from their own keys (issue 21 item 9: `roofline
--gpu H100`, the first example of its own --help, needed the [hf] extra). That is only honest if every entry
describes the same model either way: checked here for every entry, on every field of its description (the
spec of every layer, which answers counts, cache and bytes)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections import OrderedDict

import pytest

from expkit.models import description as D


def _figures(desc: D.ModelDescription) -> D.ModelDescription:
    """Every field of the description but its notes: the layer specs answer every per-kind question."""
    return dataclasses.replace(desc, approximations=())


@pytest.mark.parametrize("name", D.catalog_names())
def test_a_catalog_entry_is_the_same_model_without_transformers(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    full = _figures(D.load_model_description(name))
    monkeypatch.setitem(sys.modules, "transformers", None)  # `import transformers` raises ImportError
    monkeypatch.setattr(D, "_DESCRIPTIONS", OrderedDict())  # another install: nothing described yet
    light = D.load_model_description(name)
    assert _figures(light) == full
    assert any("transformers is not installed" in n for n in light.approximations)


def test_a_users_config_still_needs_transformers(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from expkit.errors import MissingDependency

    cfg = tmp_path / "config.json"
    monkeypatch.setitem(sys.modules, "transformers", None)
    raw = {"model_type": "qwen2", "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 100}
    with pytest.raises(MissingDependency, match="transformers"):
        D.describe_config(raw, name="mine", source=str(cfg))


def test_roofline_h100_runs_without_transformers() -> None:
    code = (
        "import sys; sys.modules['transformers'] = None; sys.modules['peft'] = None\n"
        "from expkit.cli.app import main; sys.argv = ['expkit', 'roofline', '--gpu', 'H100', '--json']; main()"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert '"ridge_flop_per_byte"' in res.stdout
