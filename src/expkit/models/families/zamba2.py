"""Zamba2: a Mamba-2 mixer in every layer; on the ``hybrid`` layers (transformers' ``layers_block_type``, whose
indices it writes to ``hybrid_layer_ids``) a shared transformer block runs first and its output, through the
layer's own ``linear`` (hidden x hidden), is added to the Mamba-2 input (transformers' Zamba2HybridLayer).

The block (Zamba2AttentionDecoderLayer): attention over the concatenation of the layer's input and the
embedding output (2 x hidden in: q, k, v 2h -> heads x head_dim, head_dim = 2h / heads; o -> hidden) and a
gated MLP of ``intermediate_size`` (fused gate_up). ``num_mem_blocks`` blocks are stored and applied in turn
(use j runs block j % num_mem_blocks): the first ``num_mem_blocks`` uses hold the weights, the later uses
apply them again (their FLOPs and K/V cache count per use; their weights are stored and read once). Each
use has its own adapters (rank ``adapter_rank``): one on the MLP's gate_up (always built by transformers
5.25), and on q, k and v when ``use_shared_attention_adapter``. The cache of a hybrid layer holds the block's
K/V and the Mamba-2 state; of the other layers, the Mamba-2 state."""

from dataclasses import dataclass
from typing import Any

from expkit.models.attention import AttentionSpec, GroupedQueryAttention
from expkit.models.config_fields import attr
from expkit.models.families.mamba2 import ssd_mixer
from expkit.models.families.registry import Family, register
from expkit.models.mlp import DenseMlp
from expkit.models.saved import ActivationTerm, SavedActivationContext

_FIELDS = ("mamba_expand", "n_mamba_heads", "mamba_headdim", "mamba_d_state", "mamba_ngroups", "mamba_d_conv")


@dataclass(frozen=True, kw_only=True)
class SharedBlockUse(GroupedQueryAttention):
    """One use of a Zamba2 shared transformer block: its attention (q, k, v over ``input_size`` = 2 hidden),
    its gated MLP of ``mlp_intermediate``, this use's adapters (``adapter_shapes``) and the layer's own
    hidden x hidden ``linear``. ``holds_weights``: the use that stores the block (the block's first); the
    others apply the stored weights (``shared_linear_params``)."""

    input_size: int
    mlp_intermediate: int
    adapter_shapes: tuple[tuple[int, int], ...]
    block: int
    holds_weights: bool

    @property
    def _mlp(self) -> DenseMlp:
        return DenseMlp(intermediate_size=self.mlp_intermediate)

    def _block_shapes(self, hidden: int) -> tuple[tuple[int, int], ...]:
        q, kv = self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        attention = ((self.input_size, q), (self.input_size, kv), (self.input_size, kv), (q, hidden))
        return (*attention, (hidden, 2 * self.mlp_intermediate), (self.mlp_intermediate, hidden))

    def linear_shapes(self, hidden: int) -> tuple[tuple[int, int], ...]:
        return (*self._block_shapes(hidden), *self.adapter_shapes, (hidden, hidden))

    def shared_linear_params(self, hidden: int) -> int:
        return 0 if self.holds_weights else sum(i * o for i, o in self._block_shapes(hidden))

    @property
    def norm_params(self) -> int:
        return 0  # the block's two RMSNorms (2h, h) are stored once, with the block (left out, as all norms)

    def saved_terms(self, ctx: SavedActivationContext) -> list[ActivationTerm]:
        """The attention's and the MLP's terms as a Llama block saves them, plus the concatenated 2h input of
        the block's first norm and the layer's linear input (approximate: not measured on Zamba2)."""
        a = ctx.act
        extra = ActivationTerm(
            "shared block 2h input and linear input (approximate)", a * (self.input_size + ctx.hidden_size), "3h"
        )
        return [*super().saved_terms(ctx), *self._mlp.saved_terms(ctx), extra]

    def assumptions(self) -> tuple[str, ...]:
        return (
            *super().assumptions(),
            "Zamba2 shared blocks: each stored block's weights are counted once per step in the bytes read (as "
            "stored); a GPU whose cache cannot hold a block reads it again at every use",
        )

    @property
    def label(self) -> str:
        # one label for the block's uses (the meta-device count groups them by parameter names)
        return f"shared block {self.block}: {super().label} over 2h, MLP {self.mlp_intermediate}"


def _mixer(cfg: Any, raw: dict[str, Any], hidden: int) -> AttentionSpec:
    return ssd_mixer(cfg, raw, hidden, _FIELDS)


def _block_uses(cfg: Any, raw: dict[str, Any], hidden: int) -> tuple[AttentionSpec, ...]:
    """One ``SharedBlockUse`` per hybrid layer, in layer order (transformers' Zamba2Model.get_layers)."""
    types = getattr(cfg, "layer_types", None) if cfg is not None else None
    uses = sum(t == "hybrid" for t in types) if types else len(raw.get("hybrid_layer_ids") or ())
    blocks = int(attr(cfg, raw, "num_mem_blocks") or 1)
    heads = int(attr(cfg, raw, "num_attention_heads"))
    kv_heads = int(attr(cfg, raw, "num_key_value_heads") or heads)
    head_dim = 2 * hidden // heads  # Zamba2Config: attention_head_dim = attention_hidden_size // heads
    inter = int(attr(cfg, raw, "intermediate_size") or 4 * hidden)
    rank = int(attr(cfg, raw, "adapter_rank") or 128)
    adapters: tuple[tuple[int, int], ...] = ((hidden, rank), (rank, 2 * inter))  # gate_up's adapter
    if attr(cfg, raw, "use_shared_attention_adapter"):
        adapters = (*adapters, *((2 * hidden, rank), (rank, 2 * hidden)) * 3)  # q, k and v adapters
    return tuple(
        SharedBlockUse(
            num_heads=heads,
            num_kv_heads=kv_heads,
            head_dim=head_dim,
            v_head_dim=head_dim,
            input_size=2 * hidden,
            mlp_intermediate=inter,
            adapter_shapes=adapters,
            block=j % blocks,
            holds_weights=j < blocks,
        )
        for j in range(uses)
    )


ZAMBA2 = register(
    Family(
        name="zamba2",
        model_types=("zamba2",),
        architectures=("Zamba2ForCausalLM",),
        fields=(
            *_FIELDS,
            "hybrid_layer_ids",
            "layers_block_type",
            "num_mem_blocks",
            "adapter_rank",
            "use_shared_attention_adapter",
            "chunk_size",
            "use_conv_bias",
            "add_bias_linear",
            "num_logits_to_keep",
            "time_step_min",
            "time_step_max",
            "time_step_floor",
            "time_step_limit",
            # derived by Zamba2Config from other fields (head widths), or read by no module of transformers
            # 5.25 (ffn_hidden_size: the MLP is intermediate_size wide; use_shared_mlp_adapter: the MLP's
            # adapters are always built): no count, cache or byte changes with them
            "kv_channels",
            "ffn_hidden_size",
            "use_shared_mlp_adapter",
            # rotary embedding switches (no weights)
            "use_mem_rope",
            "use_long_context",
        ),
        mlp_free=True,
        mixer=_mixer,
        parallel_layer_types=("hybrid",),
        parallel_mixers=_block_uses,
    )
)
