"""T5 (Flan-T5, T5 v1.1, the original T5): an encoder and a decoder of ``num_layers`` /
``num_decoder_layers`` blocks, ``num_heads`` heads of ``d_kv`` (their width need not be ``d_model``),
RMS-style norms without bias, no bias on any matmul, a gated-GELU MLP (wi_0, wi_1, wo) when
``feed_forward_proj`` is ``gated-*``, else wi, wo. Relative position buckets (an embedding in each stack's
first block) are counted by the meta build. transformers 5's ``T5Config`` ties the output head to the
embedding whatever ``tie_word_embeddings`` says (it reads the flag only to scale the decoder's output)."""

from typing import Any

from expkit.models.attention import CrossAttention, EncoderAttention, GroupedQueryAttention
from expkit.models.config_fields import attr, int_field
from expkit.models.families.registry import Family, Stacks, register
from expkit.models.mlp import DenseMlp, MlpSpec, PlainMlp


def read_ints(cfg: Any, raw: dict[str, Any], source: str, *names: str) -> list[int]:
    """The fields ``names`` (transformers' value first, then the file's), each a positive integer."""
    return [int_field({n: attr(cfg, raw, n)}, n, source) for n in names]


def _stacks(cfg: Any, raw: dict[str, Any], source: str) -> Stacks:
    hidden, heads, head_dim, enc, ff, vocab = read_ints(
        cfg, raw, source, "d_model", "num_heads", "d_kv", "num_layers", "d_ff", "vocab_size"
    )
    dec = int_field({"num_decoder_layers": attr(cfg, raw, "num_decoder_layers") or enc}, "num_decoder_layers", source)
    proj = str(attr(cfg, raw, "feed_forward_proj") or "relu")
    act = str(attr(cfg, raw, "dense_act_fn") or proj.split("-")[-1])
    saves = 4 if act == "gelu_new" else 1  # transformers' NewGELUActivation is 4 elementwise ops
    mlp: MlpSpec = (
        DenseMlp(intermediate_size=ff, activation_saves=saves)
        if proj.startswith("gated")
        else PlainMlp(intermediate_size=ff, activation_saves=saves)
    )
    notes = []
    if cfg is not None and raw.get("tie_word_embeddings") is False and getattr(cfg, "tie_word_embeddings", False):
        notes.append(
            "tie_word_embeddings = false: transformers 5's T5Config ties the output head to the embedding "
            "anyway (the flag only scales the decoder output), so the head is counted once, as transformers builds it"
        )
    return Stacks(
        hidden_size=hidden,
        vocab_size=vocab,
        encoder_layers=enc,
        decoder_layers=dec,
        encoder_attention=EncoderAttention(
            num_heads=heads, num_kv_heads=heads, head_dim=head_dim, v_head_dim=head_dim, position_bias=True
        ),
        decoder_attention=GroupedQueryAttention(
            num_heads=heads, num_kv_heads=heads, head_dim=head_dim, v_head_dim=head_dim, position_bias=True
        ),
        cross_attention=CrossAttention(
            num_heads=heads, num_kv_heads=heads, head_dim=head_dim, v_head_dim=head_dim, position_bias=True
        ),
        encoder_mlp=mlp,
        decoder_mlp=mlp,
        tied_embeddings=bool(attr(cfg, raw, "tie_word_embeddings")),
        notes=tuple(notes),
        relative_bias=True,
        dropout=float(attr(cfg, raw, "dropout_rate") or 0.0),
        probs_dropout=float(attr(cfg, raw, "dropout_rate") or 0.0),
        activation_dropout=float(attr(cfg, raw, "dropout_rate") or 0.0),
        stack_dropouts=(1, 1),
    )


T5 = register(
    Family(
        name="t5",
        model_types=("t5", "mt5"),
        architectures=("T5ForConditionalGeneration", "T5Model", "MT5ForConditionalGeneration", "MT5Model"),
        fields=(
            "d_model",
            "d_kv",
            "d_ff",
            "num_heads",
            "num_layers",
            "num_decoder_layers",
            "feed_forward_proj",
            "is_gated_act",
            "dense_act_fn",
            "relative_attention_num_buckets",
            "relative_attention_max_distance",
            "n_positions",
            "dropout_rate",
            "layer_norm_epsilon",
            "initializer_factor",
            "output_past",
        ),
        stacks=_stacks,
    )
)
