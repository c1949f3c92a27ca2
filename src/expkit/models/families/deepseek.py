"""DeepSeek-V2/V3/V3.2 (and renamed copies: Kimi-K2 resolves here by ``DeepseekV3ForCausalLM``): latent
attention (MLA) and routed + shared experts from ``first_k_dense_replace`` on."""

from expkit.models.families.registry import Family, register

DEEPSEEK = register(
    Family(
        name="deepseek",
        model_types=("deepseek_v2", "deepseek_v3", "deepseek_v32"),
        architectures=("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM"),
        fields=("q_lora_rank", "kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"),
        latent_attention=True,
        moe_layer_freq_ignored=True,
    )
)
