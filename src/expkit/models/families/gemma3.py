"""Gemma-3: RMSNorm on q and k per head; the local/global pattern comes from transformers' ``layer_types``."""

from expkit.models.families.registry import Family, register

GEMMA3 = register(Family(name="gemma3", model_types=("gemma3", "gemma3_text"), qk_norm=True))
