"""``expkit roofline``: the seed's H100 ridge, the registry listing, figures, measured roofs, bad input."""

from __future__ import annotations

import json

import pytest


def test_h100_ridge_json(cli):
    res = cli("roofline", "--gpu", "H100", "--json")
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)["result"]
    assert data["ridge_flop_per_byte"] == pytest.approx(295, abs=1)  # seed C6.1
    assert data["bound"] == "memory" and data["phase"] == "decode" and data["batch"] == 1
    assert [p["name"] for p in data["parts"]] == ["weight matmuls", "KV-cache attention"]


def test_text_output_names_bound_and_critical_batch(cli):
    res = cli("roofline", "--gpu", "A100 80GB SXM", "--model", "qwen2.5-7b", "--batch", "64", "--weight-bits", "4")
    assert res.exit_code == 0, res.stderr
    assert "ridge 153 FLOP/byte" in res.stdout
    assert "memory-bound" in res.stdout and "critical batch:" in res.stdout and "4-bit weights" in res.stdout


def test_train_phase_is_compute_bound_and_figure_is_written(cli, tmp_path):
    fig = tmp_path / "roof.png"
    res = cli(
        "roofline",
        "--gpu",
        "h100",
        "--phase",
        "train",
        "--batch",
        "8",
        "--context",
        "2048",
        "--figure",
        str(fig),
        "--json",
    )
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["result"]["bound"] == "compute"
    assert fig.stat().st_size > 10_000 and fig.read_bytes()[:4] == b"\x89PNG"


def test_gpus_lists_registry_with_sources(cli):
    res = cli("roofline", "gpus", "--json")
    assert res.exit_code == 0
    gpus = {g["name"]: g for g in json.loads(res.stdout)["result"]}
    assert {"A100 80GB SXM", "H100 SXM", "H200", "B200", "RTX 4090", "L4", "L40S"} <= set(gpus)
    assert gpus["H100 SXM"]["datasheet_sparse"] is True and "datasheet" in gpus["H100 SXM"]["source"]
    text = cli("roofline", "gpus")
    assert "H100 SXM" in text.stdout and "sparse/2" in text.stdout


def test_unknown_gpu_lists_the_known_ones(cli):
    res = cli("roofline", "--gpu", "T4")
    assert res.exit_code == 2
    assert "unknown GPU 'T4'" in res.stderr and "H100 SXM" in res.stderr and "L40S" in res.stderr


def test_bad_phase_and_model(cli):
    res = cli("roofline", "--phase", "serve")
    assert res.exit_code == 2 and "--phase 'serve'" in res.stderr
    res = cli("roofline", "--model", "no-such-model")
    assert res.exit_code == 2 and "no-such-model" in res.stderr


def test_measure_small(cli):
    res = cli("roofline", "measure", "--gemm-n", "128", "--copy-mib", "4", "--repeats", "2", "--json")
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)["result"]
    assert data["device"] == "cpu" and data["gemm"]["n"] == 128
    assert data["ridge_flop_per_byte"] == pytest.approx(data["peak_flop_s"] / data["bandwidth_bytes_s"])
    assert data["gemm_vs_reference_ratio"] is None


def test_decode_bad_batch_list(cli):
    res = cli("roofline", "decode", "--batch-sizes", "1,x")
    assert res.exit_code == 2 and "'1,x'" in res.stderr


def test_decode_measured_json_and_figure(cli, tmp_path):
    fig = tmp_path / "decode.png"
    res = cli(
        "roofline",
        "decode",
        "--batch-sizes",
        "1,4",
        "--new-tokens",
        "2",
        "--threads",
        "1",
        "--figure",
        str(fig),
        "--json",
    )
    assert res.exit_code == 0, res.stderr
    pts = json.loads(res.stdout)["result"]
    assert [p["batch"] for p in pts] == [1, 4]
    assert all(p["tokens_per_s"] == pytest.approx(p["batch"] / p["step_time_s"]) for p in pts)
    assert pts[1]["intensity_flop_per_byte"] > pts[0]["intensity_flop_per_byte"]
    assert fig.read_bytes()[:4] == b"\x89PNG"


# issue 15 / issue 13 regressions


def test_figure_that_is_a_directory_is_refused_before_work(cli, tmp_path):
    res = cli("roofline", "--figure", str(tmp_path))
    assert res.exit_code == 2
    assert "is a directory" in res.stderr and "Traceback" not in res.stderr


def test_unsupported_figure_suffix_is_exit_2_not_a_traceback(cli, tmp_path):
    res = cli("roofline", "--figure", str(tmp_path / "roof.xyz"))
    assert res.exit_code == 2
    assert "'.xyz' is not one of .png, .svg, .pdf" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "roof.xyz").exists()


def test_reported_figure_path_is_the_file_written(cli, tmp_path):
    fig = tmp_path / "r.svg"
    res = cli("roofline", "--figure", str(fig))
    assert res.exit_code == 0, res.stderr
    assert fig.is_file() and f"figure: {fig}" in res.stdout.replace("\n", "")


def test_ambiguous_gpu_asks_which(cli):
    res = cli("roofline", "--gpu", "a100")
    assert res.exit_code == 2
    assert "A100 40GB SXM, A100 80GB SXM, A100 80GB PCIe" in res.stderr


def test_moe_decode_prints_routing_assumption_and_weights_read(cli):
    res = cli("roofline", "--model", "mixtral-8x7b", "--json")
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)["result"]
    assert data["weight_bytes"] == pytest.approx(2 * 12_748_587_008)  # top-2 of 8 experts, bf16
    assert any("uniform" in a for a in data["assumptions"])
    text = cli("roofline", "--model", "mixtral-8x7b").stdout
    assert "assumed: MoE: uniform" in text.replace("\n", " ")


def test_garbage_config_is_exit_2_naming_the_field(cli, tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(
        json.dumps(
            {
                "model_type": "llama",
                "hidden_size": 65,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "vocab_size": 10,
            }
        )
    )
    res = cli("roofline", "--model", str(cfg))
    assert res.exit_code == 2 and "hidden_size 65 is not divisible by num_attention_heads 4" in res.stderr
    cfg.write_text(
        json.dumps({"hidden_size": 64, "num_hidden_layers": 10**12, "num_attention_heads": 4, "vocab_size": 10})
    )
    res = cli("roofline", "--model", str(cfg))
    assert res.exit_code == 2 and "num_hidden_layers" in res.stderr


def test_quantized_checkpoint_defaults_to_its_own_weight_bits(cli):
    res = cli("roofline", "--model", "deepseek-v3", "--json")
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)["result"]
    assert data["weight_bits"] == 8  # quantization_config: fp8
    # batch 1: the active weights as the checkpoint stores them: fp8 + one fp32 scale per 128 x 128 block,
    # the output head (129280 x 7168) at bf16, as `mem --mode infer` stores it
    head = 129280 * 7168
    expected = (data["active_params"] - head) * (8 + 32 / 128**2) / 8 + 2 * head
    assert data["weight_bytes"] == pytest.approx(expected, rel=1e-9)
    assert (
        json.loads(cli("roofline", "--model", "deepseek-v3", "--weight-bits", "16", "--json").stdout)["result"][
            "weight_bits"
        ]
        == 16
    )
