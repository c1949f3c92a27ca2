"""expkit.errors: require() and the optional-package table agree with pyproject's extras."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import tomllib

from expkit.errors import EXTRA_OF_PACKAGE, MissingDependency, missing_dependency, require

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _requirement_name(req: str) -> str:
    for stop in "<>=!~[; ":
        req = req.split(stop)[0]
    return req.strip().lower()


def test_each_optional_package_is_in_the_extra_the_table_names():
    extras = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    for package, extra in EXTRA_OF_PACKAGE.items():
        names = {_requirement_name(r) for r in extras[extra]}
        assert package in names, f"{package} is not in expkit[{extra}]: {sorted(names)}"


def test_no_core_dependency_is_called_optional():
    core = {_requirement_name(r) for r in tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]}
    assert not core & set(EXTRA_OF_PACKAGE)


def test_require_returns_the_module():
    assert require("json") is sys.modules["json"]


def test_require_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError, as without the extra
    with pytest.raises(MissingDependency, match=r"needs torch, which is not installed: pip install 'expkit\[torch\]'"):
        require("torch")


def test_require_of_an_unknown_package_keeps_the_import_error():
    with pytest.raises(ModuleNotFoundError):
        require("no_such_package_h7a")


def test_missing_dependency_maps_submodules_and_ignores_the_rest():
    assert "expkit[hf]" in str(missing_dependency(ModuleNotFoundError("x", name="transformers.models")))
    assert missing_dependency(ModuleNotFoundError("x", name="numpy")) is None
    assert missing_dependency(ImportError("cannot import name 'f'")) is None
