"""Recurrent mixers that take attention's place in hybrid models: a fixed-size state per sequence, no KV cache.

``MambaMixer`` is Mamba's selective state-space layer (Jamba); ``GatedDeltaNet`` the gated delta-rule linear
attention of Qwen3-Next. Both answer the attention kinds' questions (``AttentionSpec``), so the memory ledger
and the roofline ask them the same way: their cache per token is 0 and per sequence a conv state plus a
recurrent state, whatever the context. The recurrent state is float32 (transformers' mixers compute and keep it
in fp32; measured from the cache they fill on the meta device), the conv state in the activations' dtype.

A decode step reads the one state of each sequence: ``cached_tokens`` is 1 and ``decode_flop_per_cached_token``
the FLOPs of one state update and readout; prefill or training runs that update once per token
(``causal_pairs`` is the context, ``pair_flop`` the update's FLOPs).
"""

from __future__ import annotations

from dataclasses import dataclass

from expkit.models.attention import AttentionSpec
from expkit.models.saved import ActivationTerm, SavedActivationContext

__all__ = ["STATE_BYTES", "GatedDeltaNet", "MambaMixer", "RecurrentMixer"]

STATE_BYTES = 4  # fp32 recurrent state: transformers' Jamba/Qwen3-Next mixers keep it in float32


@dataclass(frozen=True, kw_only=True)
class RecurrentMixer(AttentionSpec):
    """A mixer with a fixed state per sequence; a base class. ``conv_channels`` x ``conv_kernel`` is the
    short causal convolution's state (the last kernel inputs, as transformers keeps them);
    ``state_elements`` the recurrent state of one sequence. The attention fields keep their meaning where one
    exists (heads of the mixer) and the base's ``window``/``chunk`` stay None."""

    conv_channels: int
    conv_kernel: int

    @property
    def state_elements(self) -> int:
        """Elements of the recurrent state of one sequence (fp32)."""
        raise NotImplementedError

    @property
    def state_update_flop(self) -> int:
        """FLOPs of one token's state update and readout (besides the projections)."""
        raise NotImplementedError

    # -- a fixed state instead of a KV cache --

    @property
    def kv_cache_elements_per_token(self) -> int:
        return 0

    @property
    def conv_state_elements(self) -> int:
        return self.conv_channels * self.conv_kernel

    def cached_tokens(self, context: int) -> int:
        return 1  # one state per sequence stands for the whole context

    def cache_elements(self, context: int) -> int:
        return self.conv_state_elements + self.state_elements

    def cache_bytes(self, context: int, dtype_bytes: int) -> int:
        return self.conv_state_elements * dtype_bytes + self.state_elements * STATE_BYTES

    def causal_pairs(self, context: int) -> float:
        return float(context)  # one state update per token: linear in the context

    @property
    def decode_flop_per_cached_token(self) -> int:
        return self.state_update_flop + 2 * self.conv_state_elements

    @property
    def pair_flop(self) -> int:
        return self.decode_flop_per_cached_token

    @property
    def rope_dim(self) -> int:
        return 0  # no rotary position here

    def cache_formula(self, layers: int, context: int) -> str:
        return (
            f"{layers} {self.kind} layers * (conv state {self.conv_channels} * {self.conv_kernel} + "
            f"{self.cache_form()} in fp32), whatever the context"
        )

    def assumptions(self) -> tuple[str, ...]:
        return (
            f"{self.kind} layers: a fixed state per sequence (conv state in the cache dtype + fp32 recurrent "
            "state, as transformers keeps them), read once per decode step; prefill and training update it "
            "once per token (linear in the context)",
        )

    def _projection_terms(self, ctx: SavedActivationContext, hidden: int) -> list[ActivationTerm]:
        """The projections' saved inputs and the scan's saved tensors, per token: the input projections read
        the normed hidden state, the output projection the mixer's output; the scan keeps its inputs."""
        shapes = self.linear_shapes(hidden)
        n_in = sum(1 for i, _ in shapes if i == hidden)
        b_in, f_in = ctx.linear_inputs(n_in if ctx.full else 0, hidden, "h")
        out_w = shapes[-1][0]
        scan = ctx.act * sum(o for i, o in shapes if i == hidden)
        return [
            ActivationTerm(f"{self.kind} input projections' inputs", b_in, f_in),
            ActivationTerm(
                f"{self.kind} scan inputs (approximate)",
                scan,
                f"{ctx.act} * the input projections' outputs ({scan // max(ctx.act, 1)} per token)",
            ),
            ActivationTerm(f"{self.kind} output projection input", ctx.act * out_w, f"{ctx.act} * {out_w}"),
        ]

    def saved_terms(self, ctx: SavedActivationContext) -> list[ActivationTerm]:
        return self._projection_terms(ctx, ctx.hidden_size)


@dataclass(frozen=True, kw_only=True)
class MambaMixer(RecurrentMixer):
    """Mamba's selective SSM (Gu & Dao 2023, Alg. 2; transformers' JambaMambaMixer): ``in_proj`` (hidden ->
    2 inner: x and the gate z), a depthwise conv of ``conv_kernel`` over x, ``x_proj`` (inner -> dt_rank + 2
    d_state: dt, B, C), ``dt_proj`` (dt_rank -> inner), the scan over a state of inner x d_state, ``out_proj``
    (inner -> hidden). State per sequence: conv inner x d_conv + ssm inner x d_state."""

    inner: int
    d_state: int
    dt_rank: int

    @property
    def kind(self) -> str:
        return "mamba"

    @property
    def state_elements(self) -> int:
        return self.inner * self.d_state

    @property
    def state_update_flop(self) -> int:
        # per channel and state: exp(dt A), dt B x, h = dA h + dBx, y += C h -> ~7 FLOPs (Alg. 2 written out);
        # + D x and the gate z per channel
        return 7 * self.inner * self.d_state + 4 * self.inner

    @property
    def qkvo_elements_per_token(self) -> int:
        # the scan reads x, z, dt (inner each), B, C (d_state each) and writes y (inner)
        return 4 * self.inner + 2 * self.d_state

    def linear_shapes(self, hidden: int) -> tuple[tuple[int, int], ...]:
        return (
            (hidden, 2 * self.inner),
            (self.inner, self.dt_rank + 2 * self.d_state),
            (self.dt_rank, self.inner),
            (self.inner, hidden),
        )

    def cache_form(self) -> str:
        return f"ssm state {self.inner} * d_state {self.d_state}"

    @property
    def label(self) -> str:
        return f"mamba inner {self.inner} state {self.d_state}"


@dataclass(frozen=True, kw_only=True)
class GatedDeltaNet(RecurrentMixer):
    """Gated delta-rule linear attention (Yang et al. 2024, "Gated Delta Networks"; transformers'
    Qwen3NextGatedDeltaNet): ``in_proj_qkvz`` (hidden -> 2 key_dim + 2 value_dim: q, k, v and the output
    gate z), ``in_proj_ba`` (hidden -> 2 value heads: the write strength beta and the decay a), a depthwise
    conv over q, k, v, the recurrence over a state of ``num_heads`` x ``head_dim`` (key) x ``v_head_dim`` per
    sequence, ``out_proj`` (value_dim -> hidden). ``num_heads`` are the value heads, ``num_kv_heads`` the key
    heads (keys are shared by groups of value heads)."""

    @property
    def kind(self) -> str:
        return "gated-deltanet"

    @property
    def key_dim(self) -> int:
        return self.num_kv_heads * self.head_dim

    @property
    def value_dim(self) -> int:
        return self.num_heads * self.v_head_dim

    @property
    def state_elements(self) -> int:
        return self.num_heads * self.head_dim * self.v_head_dim

    @property
    def state_update_flop(self) -> int:
        # per value head on a (dk, dv) state S: decay g S (dk dv), k^T S (2 dk dv), S += beta k (v - k^T S)^T
        # (2 dk dv), o = q^T S (2 dk dv): 7 dk dv
        return 7 * self.state_elements

    @property
    def qkvo_elements_per_token(self) -> int:
        return 2 * self.key_dim + 3 * self.value_dim  # q, k, v, z read; o written

    def linear_shapes(self, hidden: int) -> tuple[tuple[int, int], ...]:
        return (
            (hidden, 2 * self.key_dim + 2 * self.value_dim),
            (hidden, 2 * self.num_heads),
            (self.value_dim, hidden),
        )

    def cache_form(self) -> str:
        return f"state {self.num_heads} heads * {self.head_dim} * {self.v_head_dim}"

    @property
    def label(self) -> str:
        return f"gated-deltanet {self.num_heads} heads {self.head_dim}x{self.v_head_dim}"
