"""Qwen2 (q/k/v biases) and Qwen3 (RMSNorm on q and k per head), dense and MoE."""

from expkit.models.families.registry import Family, register

QWEN2 = register(Family(name="qwen2", model_types=("qwen2", "qwen2_vl", "qwen2_moe"), qkv_bias=True))
QWEN3 = register(Family(name="qwen3", model_types=("qwen3", "qwen3_moe"), qk_norm=True))
