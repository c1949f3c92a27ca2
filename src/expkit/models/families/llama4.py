"""Llama-4: chunked attention on the RoPE layers, MoE every ``interleave_moe_layer_step`` layers with one
shared expert of ``intermediate_size``, dense layers ``intermediate_size_mlp`` wide."""

from expkit.models.families.registry import Family, register

LLAMA4 = register(
    Family(
        name="llama4",
        model_types=("llama4_text", "llama4"),
        fields=("intermediate_size_mlp", "interleave_moe_layer_step", "attention_chunk_size"),
        always_shared_expert=True,
        dense_width_field="intermediate_size_mlp",
    )
)
