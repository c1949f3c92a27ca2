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

__all__ = ["STATE_BYTES", "GatedDeltaNet", "Mamba2Mixer", "MambaMixer", "RecurrentMixer", "ShortConvMixer"]

STATE_BYTES = 4  # fp32 recurrent state: transformers' Jamba/Qwen3-Next mixers keep it in float32
DELTA_CHUNK = 64  # transformers' torch_chunk_gated_delta_rule: chunk_size


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

    def cache_read_bytes(self, context: int, dtype_bytes: int) -> int:
        return self.cache_bytes(context, dtype_bytes)

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
            self.activation_note,
        )

    @property
    def activation_note(self) -> str:
        """What the training activations assume about the mixer's kernels (an entry of the approximations)."""
        return (
            f"{self.kind} training activations: what transformers' PyTorch path saves (it runs when "
            "mamba_ssm / causal_conv1d / fla are not installed, and always on the CPU), measured on the CPU; the "
            "fused CUDA kernels of those packages save less (they recompute the scan's intermediates in backward)"
        )

    def saved_terms(self, ctx: SavedActivationContext) -> list[ActivationTerm]:
        """Saved-for-backward bytes per token of one mixer; each kind reads its transformers code path."""
        raise NotImplementedError


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

    def saved_terms(self, ctx: SavedActivationContext) -> list[ActivationTerm]:
        """What transformers' ``JambaMambaMixer`` saves for backward per token on its PyTorch path (the one that
        runs without mamba_ssm/causal_conv1d, i.e. on the CPU), read from ``mamba_selective_scan`` and checked
        exactly with ``saved_tensors_hooks`` (tests/models/test_recurrent_saved.py). The sequential scan keeps
        the discretized A and B and every step's state: 12 d_state bytes per channel and token in fp32, which
        the fused CUDA kernel (``mamba_inner_fn``) does not store (it recomputes them in backward). Per
        sequence, besides: A (twice), the initial state and the conv padding, a few KB per layer, not counted.
        Measured exact for a full fine-tune in fp32 and under bf16 autocast; with a frozen base (LoRA) the same
        terms are used, marked approximate (not measured)."""
        d, n, r, a, c = self.inner, self.d_state, self.dt_rank, ctx.act, ctx.cast_bytes
        tag = "" if ctx.full else " (approximate)"
        up = 4 if ctx.autocast else 0  # under autocast: fp32 copies the PyTorch path makes of 16-bit tensors
        b_in, f_in = ctx.linear_inputs(1, ctx.hidden_size, "h")
        return [
            ActivationTerm("mamba in_proj input", b_in, f_in),
            ActivationTerm(f"mamba in_proj output (x and gate z){tag}", a * 2 * d, f"{a} * 2 * inner {d}"),
            ActivationTerm(f"mamba conv input (16-bit cast){tag}", up // 2 * d, "2 * inner under autocast, else 0"),
            ActivationTerm(f"mamba conv output, x_proj input{tag}", 2 * a * d, f"2 * {a} * inner"),
            ActivationTerm(
                "mamba dt/B/C RMSNorms",
                (4 + a) * (r + 2 * n) + 12,
                f"(4 + {a}) * (dt_rank {r} + 2 * d_state {n}) + 3 rsqrt 4",
            ),
            ActivationTerm("mamba dt_proj input", c * r, f"{c} * dt_rank"),
            ActivationTerm(f"mamba softplus(dt) input and output{tag}", 2 * a * d, f"2 * {a} * inner"),
            ActivationTerm(f"mamba discretized A and B (fp32){tag}", 8 * d * n, f"2 * 4 * inner {d} * d_state {n}"),
            ActivationTerm("mamba B, C", (4 + a) * n, f"(4 + {a}) * d_state"),
            ActivationTerm("mamba x in fp32", up * d, "4 * inner under autocast (x.float()), else a view"),
            ActivationTerm(
                f"mamba scan states{tag}",
                (4 + up // 2) * d * n,
                "4 * inner * d_state per step" + (" + its 16-bit copy 2 * inner * d_state" if up else ""),
            ),
            ActivationTerm(f"mamba y + D x (fp32), silu(z){tag}", (4 + a) * d, f"(4 + {a}) * inner"),
            ActivationTerm("mamba out_proj input", c * d, f"{c} * inner"),
        ]

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

    def saved_terms(self, ctx: SavedActivationContext) -> list[ActivationTerm]:
        """What transformers' ``Qwen3NextGatedDeltaNet`` saves for backward per token on its PyTorch path
        (``torch_chunk_gated_delta_rule``, the one that runs without fla, i.e. on the CPU). The rule works in
        fp32 on chunks of ``DELTA_CHUNK`` tokens (the sequence padded to a multiple) and keeps, per value head
        and token: 5 chunk-wide rows (decays, k k^T, the UT system, q k^T, the intra-chunk attention), 12
        key-wide and 8 value-wide tensors (the gated norm's among them), 10 scalars, and one state per chunk;
        out_proj's input comes on top. With as many key as value heads (no key head shared) it keeps 2 more
        key-wide and 2 more value-wide fp32 tensors per head (measured, not traced to a line). Measured with
        ``saved_tensors_hooks``: exact for a full fine-tune in fp32 on 8 shapes with shared key heads and 4 with
        equal heads (3 of them in tests/models/test_recurrent_saved.py). Under autocast or with a frozen base
        (LoRA) the same terms are used and marked approximate (under autocast the per-token bytes are not
        linear in the tokens at these sizes). fla's fused CUDA kernels save far less:
        they recompute the chunk matrices in backward."""
        hv, dk, dv, c_len = self.num_heads, self.head_dim, self.v_head_dim, DELTA_CHUNK
        exact = ctx.full and not ctx.autocast
        unshared = 2 if self.num_kv_heads == hv else 0  # fp32 key/value copies kept when no key head is shared
        tag = "" if exact else " (approximate)"
        a, cb = ctx.act, ctx.cast_bytes
        pad = -(-ctx.seq // c_len) * c_len / ctx.seq  # the rule pads the sequence to whole chunks
        b_in, f_in = ctx.linear_inputs(2, ctx.hidden_size, "h")
        conv = 2 * self.key_dim + self.value_dim
        rule = 4 * hv * ((12 + unshared) * dk + (8 + unshared) * dv + 10 + 5 * c_len) + 4 * hv * (dk * dv + 1) / c_len
        return [
            ActivationTerm("gated-deltanet in_proj_qkvz/ba input", b_in, f_in),
            ActivationTerm(f"gated-deltanet conv input and output{tag}", 2 * a * conv, f"2 * {a} * (2 key + value)"),
            ActivationTerm(
                f"gated-deltanet chunked rule (fp32){tag}",
                rule * pad,
                f"4 * {hv} heads * ({12 + unshared} dk + {8 + unshared} dv + 10 + 5 chunk {c_len})"
                f" + 4 * heads * (dk dv + 1) / chunk" + (f", padded x {pad:.3f}" if pad != 1 else ""),
            ),
            ActivationTerm("gated-deltanet out_proj input", cb * self.value_dim, f"{cb} * value"),
        ]

    @property
    def label(self) -> str:
        return f"gated-deltanet {self.num_heads} heads {self.head_dim}x{self.v_head_dim}"


@dataclass(frozen=True, kw_only=True)
class Mamba2Mixer(RecurrentMixer):
    """Mamba-2's SSD layer (Dao & Gu 2024; transformers' ``Mamba2Mixer`` and ``GraniteMoeHybridMambaLayer``):
    ``in_proj`` (hidden -> inner z + conv_dim xBC + heads dt), a depthwise conv over xBC (conv_dim = inner +
    2 n_groups d_state), a gated RMSNorm over inner, ``out_proj`` (inner -> hidden). ``num_heads`` heads of
    ``head_dim``; the state per sequence is heads x head_dim x d_state (fp32) and the conv state conv_dim x
    d_conv in the activations' dtype, as transformers' cache holds them (measured on the meta device,
    tests/models/test_families.py)."""

    inner: int
    d_state: int
    n_groups: int

    @property
    def kind(self) -> str:
        return "mamba2"

    @property
    def state_elements(self) -> int:
        return self.num_heads * self.head_dim * self.d_state

    @property
    def state_update_flop(self) -> int:
        # per head channel and state: decay, dt B x, h = dA h + dBx, y += C h (~7, as Mamba-1) + D x and the gate
        return 7 * self.state_elements + 4 * self.inner

    @property
    def qkvo_elements_per_token(self) -> int:
        return 2 * self.inner + 2 * self.n_groups * self.d_state + self.num_heads + self.inner  # x z B C dt; y

    @property
    def norm_params(self) -> int:
        # gated RMSNorm (inner) + dt_bias, A_log, D per head + the depthwise conv's weight and bias
        return self.inner + 3 * self.num_heads + self.conv_channels * (self.conv_kernel + 1)

    def linear_shapes(self, hidden: int) -> tuple[tuple[int, int], ...]:
        return ((hidden, self.inner + self.conv_channels + self.num_heads), (self.inner, hidden))

    def cache_form(self) -> str:
        return f"ssm state {self.num_heads} heads * {self.head_dim} * d_state {self.d_state}"

    def saved_terms(self, ctx: SavedActivationContext) -> list[ActivationTerm]:
        """Saved-for-backward bytes per token, approximate (not measured): the projections' inputs, the conv's
        input and output, the gate, the chunked scan's fp32 intermediates per head and the out_proj input."""
        a, c, d = ctx.act, ctx.cast_bytes, self.inner
        b_in, f_in = ctx.linear_inputs(1, ctx.hidden_size, "h")
        return [
            ActivationTerm("mamba2 in_proj input", b_in, f_in),
            ActivationTerm(
                "mamba2 conv input and output (approximate)", 2 * a * self.conv_channels, f"2 * {a} * conv_dim"
            ),
            ActivationTerm(
                "mamba2 scan intermediates, fp32 (approximate)",
                4 * (2 * d + self.num_heads * self.d_state),
                "4 * (2 * inner + heads * d_state)",
            ),
            ActivationTerm("mamba2 gated norm and out_proj input (approximate)", (a + c) * d, f"({a} + {c}) * inner"),
        ]

    @property
    def activation_note(self) -> str:
        return (
            "mamba2 training activations: an estimate of what transformers' PyTorch path saves (projection "
            "inputs, conv, gate, the chunked scan's fp32 intermediates), not measured; the fused kernels of "
            "mamba_ssm save less"
        )

    @property
    def label(self) -> str:
        return f"mamba2 {self.num_heads} heads x {self.head_dim} state {self.d_state}"


@dataclass(frozen=True, kw_only=True)
class ShortConvMixer(RecurrentMixer):
    """LFM2's gated short convolution (transformers' ``Lfm2ShortConv``): ``in_proj`` (hidden -> 3 hidden: B, C,
    x), a depthwise causal conv of ``conv_kernel`` (``conv_L_cache``) over B * x, the output C * conv, and
    ``out_proj`` (hidden -> hidden). No recurrent state: the cache of one sequence is the conv state,
    hidden x conv_kernel in the activations' dtype (transformers' cache on the meta device holds that)."""

    @property
    def kind(self) -> str:
        return "short-conv"

    @property
    def state_elements(self) -> int:
        return 0

    @property
    def state_update_flop(self) -> int:
        return 2 * self.conv_channels  # the two gates (B * x, C * y) per channel; the conv is in the base

    @property
    def qkvo_elements_per_token(self) -> int:
        return 4 * self.conv_channels  # B, C, x read; y written

    @property
    def norm_params(self) -> int:
        return self.conv_channels * self.conv_kernel  # the depthwise conv's weight (LFM2: no bias)

    def linear_shapes(self, hidden: int) -> tuple[tuple[int, int], ...]:
        return ((hidden, 3 * self.conv_channels), (self.conv_channels, hidden))

    def cache_form(self) -> str:
        return "no recurrent state"

    def saved_terms(self, ctx: SavedActivationContext) -> list[ActivationTerm]:
        """Saved-for-backward bytes per token, approximate (not measured): in_proj's input, B, C, x and B * x,
        the conv's output and out_proj's input."""
        a, c, h = ctx.act, ctx.cast_bytes, self.conv_channels
        b_in, f_in = ctx.linear_inputs(1, ctx.hidden_size, "h")
        return [
            ActivationTerm("short-conv in_proj input", b_in, f_in),
            ActivationTerm("short-conv gates and conv (approximate)", 5 * a * h, f"5 * {a} * hidden"),
            ActivationTerm("short-conv out_proj input (approximate)", c * h, f"{c} * hidden"),
        ]

    @property
    def activation_note(self) -> str:
        return (
            "short-conv training activations: an estimate of what transformers' PyTorch path saves (projection "
            "inputs, the gates, the conv), not measured"
        )

    @property
    def label(self) -> str:
        return f"short-conv {self.conv_channels} x {self.conv_kernel}"
