"""The GPU registry: datasheet figures, the dense/sparse rule, lookup and its error."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from expkit.errors import UsageError
from expkit.perf.hardware import find_gpu_for_device, get_gpu, list_gpus

REQUIRED = ("A100 80GB SXM", "H100 SXM", "H200", "B200", "RTX 4090", "L4", "L40S")


def test_registry_holds_the_gpus_the_issue_names():
    names = {g.name for g in list_gpus()}
    assert set(REQUIRED) <= names


def test_h100_ridge_is_the_seeds_295():
    # seed C6.1: 989 TFLOP/s bf16 dense / 3.35 TB/s = 295 FLOP/byte (H100 SXM datasheet)
    h100 = get_gpu("H100")
    assert h100.bandwidth_gb_s == 3350  # not 3072: datasheet "3.35TB/s"
    assert h100.ridge_flop_per_byte == pytest.approx(295, abs=1)


def test_dense_figure_follows_the_sparsity_flag_for_every_entry():
    for g in list_gpus():
        expected = g.datasheet_tflops / 2 if g.datasheet_sparse else g.datasheet_tflops
        assert g.bf16_dense_tflops == pytest.approx(expected, rel=1e-9), g.name
        assert g.source and len(g.source) > 30, g.name
        assert g.ridge_flop_per_byte == pytest.approx(g.peak_flop_s / g.bandwidth_bytes_s), g.name


def test_every_entry_in_the_json_file_has_all_fields():
    data = json.loads(resources.files("expkit.hardware").joinpath("gpus.json").read_text())
    fields = {
        "name",
        "aliases",
        "datasheet_tflops",
        "datasheet_sparse",
        "bf16_dense_tflops",
        "bandwidth_gb_s",
        "memory_gb",
        "source",
    }
    for entry in data["gpus"]:
        assert fields <= set(entry), entry.get("name")


@pytest.mark.parametrize(
    "alias, name",
    [
        ("h100", "H100 SXM"),
        ("A100-80GB", "A100 80GB SXM"),
        ("rtx 4090", "RTX 4090"),
        ("L40S", "L40S"),
        ("h200", "H200"),
    ],
)
def test_lookup_by_alias_ignores_case_and_punctuation(alias, name):
    assert get_gpu(alias).name == name


def test_unknown_gpu_lists_the_known_ones():
    with pytest.raises(UsageError, match=r"unknown GPU 'T4'.*H100 SXM.*RTX 4090"):
        get_gpu("T4")


@pytest.mark.parametrize(
    "device, name",
    [
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA A100-SXM4-40GB", "A100 40GB SXM"),
        ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA L4", "L4"),
    ],
)
def test_cuda_device_names_map_to_entries(device, name):
    assert find_gpu_for_device(device).name == name


def test_unlisted_device_is_none_not_a_guess():
    assert find_gpu_for_device("Tesla T4") is None
