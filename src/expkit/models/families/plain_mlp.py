"""Decoders whose MLP is two matmuls (up, an activation, down) instead of a gated three: StarCoder2
(``c_fc``/``c_proj`` with biases, GELU, LayerNorm) and Nemotron (``up_proj``/``down_proj``, squared ReLU,
LayerNorm1P). Attention is Llama-style (StarCoder2 with biases when ``use_bias``)."""

from expkit.models.families.registry import Family, register

STARCODER2 = register(
    Family(
        name="starcoder2",
        model_types=("starcoder2",),
        architectures=("Starcoder2ForCausalLM",),
        fields=("use_bias", "norm_type", "norm_epsilon", "mlp_type", "residual_dropout", "embedding_dropout"),
        gated_mlp=False,
    )
)

NEMOTRON = register(
    Family(
        name="nemotron",
        model_types=("nemotron",),
        architectures=("NemotronForCausalLM",),
        gated_mlp=False,
    )
)
