"""A model config's ``torch_dtype``/``dtype`` that torch does not define is one InputError naming the field,
the value and the accepted names (issue 21: ``torch_dtype: float128`` was an AttributeError traceback from
transformers' ``getattr(torch, ...)``)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from expkit.errors import InputError
from expkit.models.config_file import DTYPE_NAMES, catalog_names, read_model_config

_LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "intermediate_size": 512,
    "vocab_size": 1000,
}


@pytest.mark.parametrize(
    "field, value", [("torch_dtype", "float128"), ("dtype", "fp16"), ("torch_dtype", ["bfloat16"]), ("dtype", 16)]
)
def test_an_unknown_dtype_is_refused_by_name(tmp_path, field, value):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({**_LLAMA, field: value}))
    with pytest.raises(InputError, match=re.escape(f"{field} {value!r} is not a torch dtype")) as info:
        read_model_config(cfg)
    assert str(info.value.path) == str(cfg) and "bfloat16" in (info.value.hint or "")


def test_a_text_config_dtype_is_checked_too(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "gemma3", "text_config": {**_LLAMA, "torch_dtype": "float128"}}))
    with pytest.raises(InputError, match="torch_dtype 'float128'"):
        read_model_config(cfg)


def test_the_accepted_names_are_torch_dtypes_and_catalog_entries_pass():
    torch = pytest.importorskip("torch")
    assert all(isinstance(getattr(torch, n, None), torch.dtype) for n in DTYPE_NAMES - {"auto"})
    for name in catalog_names():  # every published config's dtype is accepted
        read_model_config(name)


def test_mem_on_float128_is_one_line_exit_2(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({**_LLAMA, "torch_dtype": "float128"}))
    for extra in ([], ["--json"]):
        res = subprocess.run(
            [sys.executable, "-m", "expkit", "mem", str(cfg), *extra], capture_output=True, text=True, timeout=300
        )
        assert res.returncode == 2 and "Traceback" not in res.stderr
        assert res.stderr.strip() == (
            f"error: {cfg}: torch_dtype 'float128' is not a torch dtype; use one of float32, float16, bfloat16, "
            "float64, float8_e4m3fn, float8_e5m2, auto (or another torch dtype name)"
        )
        if extra:
            assert json.loads(res.stdout)["error"]["kind"] == "InputError"
