"""BART: an encoder and a decoder of ``encoder_layers`` / ``decoder_layers`` post-norm blocks (LayerNorm with
bias), biases on every matmul, an ungated GELU MLP (fc1, fc2) of ``encoder_ffn_dim`` / ``decoder_ffn_dim``,
learned positions (``max_position_embeddings`` + 2 rows per stack, counted by the meta build) and an output
head tied to the shared embedding."""

from typing import Any

from expkit.models.attention import CrossAttention, EncoderAttention, GroupedQueryAttention
from expkit.models.config_fields import attr
from expkit.models.families.registry import Family, Stacks, register
from expkit.models.families.t5 import read_ints
from expkit.models.mlp import PlainMlp

BART_FIELDS = (
    "d_model",
    "encoder_layers",
    "decoder_layers",
    "encoder_attention_heads",
    "decoder_attention_heads",
    "encoder_ffn_dim",
    "decoder_ffn_dim",
    "activation_function",
    "dropout",
    "attention_dropout",
    "activation_dropout",
    "encoder_layerdrop",
    "decoder_layerdrop",
    "scale_embedding",
    "init_std",
)


def bart_like_stacks(
    cfg: Any, raw: dict[str, Any], source: str, *, source_tokens: int | None = None, o_input_copy: bool = False
) -> Stacks:
    """Stacks from the BART field names (Whisper's too): the encoder reads ``source_tokens`` positions
    (None: as many as the context); ``o_input_copy``: the attention's output projection saves its own copy
    of the attention output (Whisper, measured)."""
    hidden, enc, dec, enc_heads, dec_heads, enc_ff, dec_ff, vocab = read_ints(
        cfg,
        raw,
        source,
        "d_model",
        "encoder_layers",
        "decoder_layers",
        "encoder_attention_heads",
        "decoder_attention_heads",
        "encoder_ffn_dim",
        "decoder_ffn_dim",
        "vocab_size",
    )
    enc_dim, dec_dim, src, copy = hidden // enc_heads, hidden // dec_heads, source_tokens, o_input_copy
    return Stacks(
        hidden_size=hidden,
        vocab_size=vocab,
        encoder_layers=enc,
        decoder_layers=dec,
        encoder_attention=EncoderAttention(
            num_heads=enc_heads,
            num_kv_heads=enc_heads,
            head_dim=enc_dim,
            v_head_dim=enc_dim,
            source_tokens=src,
            o_input_copy=copy,
        ),
        decoder_attention=GroupedQueryAttention(
            num_heads=dec_heads, num_kv_heads=dec_heads, head_dim=dec_dim, v_head_dim=dec_dim, o_input_copy=copy
        ),
        cross_attention=CrossAttention(
            num_heads=dec_heads,
            num_kv_heads=dec_heads,
            head_dim=dec_dim,
            v_head_dim=dec_dim,
            source_tokens=src,
            o_input_copy=copy,
        ),
        encoder_mlp=PlainMlp(intermediate_size=enc_ff),
        decoder_mlp=PlainMlp(intermediate_size=dec_ff),
        tied_embeddings=bool(attr(cfg, raw, "tie_word_embeddings")),
        layer_norm=True,
        embedding_norm=True,
        final_norm=False,
        learned_positions=(True, True),
        dropout=float(attr(cfg, raw, "dropout") or 0.0),
        activation_dropout=float(attr(cfg, raw, "activation_dropout") or 0.0),
        probs_dropout=float(attr(cfg, raw, "attention_dropout") or 0.0),
        stack_dropouts=(1, 0),
    )


def _stacks(cfg: Any, raw: dict[str, Any], source: str) -> Stacks:
    return bart_like_stacks(cfg, raw, source)


BART = register(
    Family(
        name="bart",
        model_types=("bart",),
        architectures=("BartForConditionalGeneration", "BartModel"),
        fields=(*BART_FIELDS, "max_position_embeddings", "add_bias_logits", "add_final_layer_norm", "normalize_before"),
        stacks=_stacks,
    )
)
