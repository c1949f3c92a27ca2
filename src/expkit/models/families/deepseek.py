"""DeepSeek-V2/V3 (and renamed copies: Kimi-K2 resolves here by ``DeepseekV3ForCausalLM``): latent attention
(MLA) and routed + shared experts from ``first_k_dense_replace`` on. DeepSeek-V3.2 adds the sparse-attention
indexer to every layer's attention, with its own key cache (``IndexedLatentAttention``)."""

from expkit.models.families.registry import Family, register

DEEPSEEK = register(
    Family(
        name="deepseek",
        model_types=("deepseek_v2", "deepseek_v3"),
        architectures=("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM"),
        fields=("q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"),
        latent_attention=True,
        moe_layer_freq_ignored=True,
    )
)

DEEPSEEK_V32 = register(
    Family(
        name="deepseek-v3.2",
        model_types=("deepseek_v32",),
        architectures=("DeepseekV32ForCausalLM",),
        fields=(*DEEPSEEK.fields, "index_head_dim", "index_n_heads", "index_topk"),
        latent_attention=True,
        moe_layer_freq_ignored=True,
        indexer=True,
    )
)
