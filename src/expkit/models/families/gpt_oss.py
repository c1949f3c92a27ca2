"""gpt-oss: grouped-query attention with biases and a learned sink per head (counted by the meta build),
sliding-window (128) and full layers alternating as transformers' ``layer_types`` gives them, and a
mixture of experts in every layer with biased, fused gate_up/down experts (``experts_per_token`` of
``num_local_experts``; the routed experts stored in mxfp4 when ``quantization_config`` says so). The SwiGLU
clamp (``swiglu_limit``) and the rope's original context move no bytes and change no count."""

from expkit.models.families.registry import Family, register

GPT_OSS = register(
    Family(
        name="gpt-oss",
        model_types=("gpt_oss",),
        architectures=("GptOssForCausalLM",),
        fields=("experts_per_token", "initial_context_length", "swiglu_limit"),
        qkv_bias=True,
    )
)
