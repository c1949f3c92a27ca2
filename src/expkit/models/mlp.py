"""MLP kinds: one class per kind, each answering every per-kind question about itself.

``DenseMlp`` is the gated (SwiGLU) MLP of Llama-style blocks; ``MoeMlp`` a mixture of experts: ``top_k`` of
``num_experts`` routed experts per token, a router, and shared experts every token goes through. The
questions: weights (all, and the ones a token multiplies by), the weights a step that routes ``tokens``
tokens reads (routing-aware, shared experts included), activation traffic, and the tensors saved for
backward. The stages ask these methods and never test a kind's name.
"""

from __future__ import annotations

from dataclasses import dataclass

from expkit.models.quantization import WeightParams
from expkit.models.saved import ActivationTerm, SavedActivationContext

__all__ = ["DenseMlp", "MlpSpec", "MoeMlp", "NoMlp", "PlainMlp"]


@dataclass(frozen=True, kw_only=True)
class MlpSpec:
    """One layer's MLP; a base class: the kinds below answer the questions. ``intermediate_size`` is the
    config's dense width (a MoE layer keeps it for reference)."""

    intermediate_size: int
    # intermediate-width tensors the activation function saves for backward: 1 (SiLU, GELU: its input);
    # T5's gelu_new is written out of elementwise ops and saves 4
    activation_saves: int = 1

    @property
    def kind(self) -> str:
        raise NotImplementedError

    @property
    def label(self) -> str:
        raise NotImplementedError

    @property
    def num_experts(self) -> int:
        """Routed experts (0: not routed)."""
        return 0

    @property
    def matmuls(self) -> int:
        """Linear modules of the MLP (gate, up, down)."""
        return 3

    @property
    def top_k(self) -> int:
        return 0

    def expert_params(self, hidden: int) -> int:
        """Weights of one routed expert (0: not routed)."""
        return 0

    def linear_params(self, hidden: int) -> int:
        """Weights of every matmul of this MLP."""
        raise NotImplementedError

    def active_linear_params(self, hidden: int) -> int:
        """Weights one token multiplies by."""
        raise NotImplementedError

    def matmul_io_per_token(self, hidden: int) -> int:
        """Activation elements the matmuls read and write per token (in + out features, active path)."""
        raise NotImplementedError

    def weight_params_read(self, hidden: int, tokens: float) -> WeightParams:
        """Weights read once by a step that routes ``tokens`` tokens, split by storage (see WeightParams)."""
        raise NotImplementedError

    def active_routed(self, routed_params: int) -> int:
        """Of ``routed_params`` routed-expert weights (counted on the meta model), those one token uses."""
        return routed_params

    def saved_terms(self, ctx: SavedActivationContext) -> list[ActivationTerm]:
        """Tensors this MLP saves for backward, bytes per token."""
        raise NotImplementedError

    def assumptions(self) -> tuple[str, ...]:
        """What the speed model assumes about this kind."""
        return ()


@dataclass(frozen=True, kw_only=True)
class DenseMlp(MlpSpec):
    """Gated MLP: gate and up (hidden -> intermediate), SiLU, product, down (intermediate -> hidden)."""

    @property
    def kind(self) -> str:
        return "dense"

    @property
    def label(self) -> str:
        return f"dense MLP {self.intermediate_size}"

    def linear_params(self, hidden: int) -> int:
        return 3 * hidden * self.intermediate_size

    def active_linear_params(self, hidden: int) -> int:
        return self.linear_params(hidden)

    def matmul_io_per_token(self, hidden: int) -> int:
        return 3 * hidden + 3 * self.intermediate_size

    def weight_params_read(self, hidden: int, tokens: float) -> WeightParams:
        return WeightParams(linear=self.linear_params(hidden))

    def saved_terms(self, ctx: SavedActivationContext) -> list[ActivationTerm]:
        a, inter = ctx.act, self.intermediate_size
        b, f = ctx.linear_inputs(ctx.savers("mlp_in"), ctx.hidden_size, "h")
        n_d = ctx.savers("down_in")
        down = (n_d * 2 * inter) if (ctx.autocast and not ctx.full) else (a * inter if n_d else 0)
        return [
            ActivationTerm("mlp_in linear inputs", b, f),
            ActivationTerm(
                "gated activation",
                (2 + self.activation_saves) * a * inter,
                f"activation {self.activation_saves}, act out, up out: {2 + self.activation_saves} * {a} * {inter}",
            ),
            ActivationTerm("down_proj input", down, f"{'saved' if n_d else 'not saved'} product {a}*{inter}"),
        ]


@dataclass(frozen=True, kw_only=True)
class MoeMlp(MlpSpec):
    """Mixture of experts: a router (hidden x E), ``experts`` routed experts of width
    ``expert_intermediate_size`` (gated, 3 matrices each), ``k`` per token, and shared experts of
    ``shared_intermediate_size`` in total (0 if none) that every token goes through."""

    experts: int
    k: int
    expert_intermediate_size: int
    shared_intermediate_size: int = 0

    @property
    def kind(self) -> str:
        return "moe"

    @property
    def label(self) -> str:
        sh = f" + shared {self.shared_intermediate_size}" if self.shared_intermediate_size else ""
        return f"MoE {self.experts} experts top-{self.k} width {self.expert_intermediate_size}{sh}"

    @property
    def num_experts(self) -> int:
        return self.experts

    @property
    def top_k(self) -> int:
        return self.k

    def expert_params(self, hidden: int) -> int:
        return 3 * hidden * self.expert_intermediate_size

    def _always_params(self, hidden: int) -> int:
        """Router + shared experts: read by every token."""
        return hidden * self.experts + 3 * hidden * self.shared_intermediate_size

    def linear_params(self, hidden: int) -> int:
        return self._always_params(hidden) + self.experts * self.expert_params(hidden)

    def active_linear_params(self, hidden: int) -> int:
        return self._always_params(hidden) + self.k * self.expert_params(hidden)

    def matmul_io_per_token(self, hidden: int) -> int:
        sh = self.shared_intermediate_size
        return (
            (hidden + self.experts)
            + self.k * (3 * hidden + 3 * self.expert_intermediate_size)
            + (3 * hidden + 3 * sh if sh else 0)
        )

    def expected_experts(self, tokens: float) -> float:
        """Distinct experts this layer reads for ``tokens`` routed tokens under uniform independent routing:
        E (1 - (1 - k/E)^tokens). 1 token: k experts; many tokens: all E."""
        return self.experts * (1 - (1 - self.k / self.experts) ** tokens)

    def weight_params_read(self, hidden: int, tokens: float) -> WeightParams:
        return WeightParams(
            linear=self._always_params(hidden), experts=self.expected_experts(tokens) * self.expert_params(hidden)
        )

    def active_routed(self, routed_params: int) -> int:
        return routed_params * self.k // self.experts

    def assumptions(self) -> tuple[str, ...]:
        return (
            f"MoE: uniform, independent routing: a step that routes n tokens reads E(1 - (1 - k/E)^n) of the "
            f"E = {self.experts} experts per MoE layer (k = {self.k}); real routers are skewed, so a batch reads "
            "somewhat fewer distinct experts",
        )

    def saved_terms(self, ctx: SavedActivationContext) -> list[ActivationTerm]:
        E, k, ie, sh = self.experts, self.k, self.expert_intermediate_size, self.shared_intermediate_size
        h, a = ctx.hidden_size, ctx.act
        n_in = 1 + (2 if sh else 0)  # router, shared gate and up read the normed hidden state
        b, f = ctx.linear_inputs(n_in, h, "h")
        terms = [
            ActivationTerm("router + shared-expert inputs", b, f),
            ActivationTerm(
                "router probs + top-k indices",
                4 * E + 40 * k,
                f"fp32 softmax/sigmoid 4*{E} + int64 routing indices 40*{k}",
            ),
        ]
        # transformers 5 runs the fused experts through torch._grouped_mm, which CPU autocast does not cast:
        # measured fp32 there; on CUDA the 16-bit path is assumed
        cpu = ctx.device == "cpu"
        ea = 4 if (ctx.autocast and cpu) else a
        lin = ea if not ctx.autocast or cpu else 2
        slot = lin * h + ea * 2 * ie + ea * ie + ea * ie + ea * h
        terms.append(
            ActivationTerm(
                "routed experts (dispatch, gate_up, act, down, combine)",
                k * slot,
                f"{k} slots * (gathered input {lin}h + gate_up {ea}*2*{ie} + act {ea}*{ie} + "
                f"product {ea}*{ie} + down output {ea}h)",
            )
        )
        if sh:
            terms.append(
                ActivationTerm(
                    "shared experts (SwiGLU + down input)",
                    4 * a * sh,
                    f"gate out, act out, up out, product: 4 * {a} * {sh}",
                )
            )
        if not ctx.full and ctx.experts_targeted:
            # peft wraps the fused 3-D expert parameters (ParamWrapper): each step builds W + B A for every
            # expert and autograd keeps it for backward: a per-layer constant, not per token. Saved-tensor hooks
            # see a second expert-sized tensor per layer, but the allocator's peak of a step does not (measured
            # on the Mixtral-style LoRA validation case: one copy predicts the peak within 0.5%, two +14%).
            merged = ctx.cast_bytes * E * 3 * h * ie
            terms.append(
                ActivationTerm(
                    "LoRA on fused experts: merged W + B A",
                    merged / ctx.tokens,
                    f"{ctx.cast_bytes} B * {E} experts * 3 * {h} * {ie} per layer, once per step",
                )
            )
        return terms


@dataclass(frozen=True, kw_only=True)
class NoMlp(MlpSpec):
    """A layer without an MLP (Mamba-2: the mixer is the whole block)."""

    intermediate_size: int = 0

    @property
    def kind(self) -> str:
        return "none"

    @property
    def label(self) -> str:
        return "no MLP"

    def linear_params(self, hidden: int) -> int:
        return 0

    def active_linear_params(self, hidden: int) -> int:
        return 0

    def matmul_io_per_token(self, hidden: int) -> int:
        return 0

    def weight_params_read(self, hidden: int, tokens: float) -> WeightParams:
        return WeightParams()

    def saved_terms(self, ctx: SavedActivationContext) -> list[ActivationTerm]:
        return []


@dataclass(frozen=True, kw_only=True)
class PlainMlp(MlpSpec):
    """Ungated MLP: up (hidden -> intermediate), an activation (GELU, ReLU), down (intermediate -> hidden):
    BART's and Whisper's fc1/fc2, the original T5's wi/wo."""

    @property
    def kind(self) -> str:
        return "plain"

    @property
    def matmuls(self) -> int:
        return 2

    @property
    def label(self) -> str:
        return f"MLP {self.intermediate_size}"

    def linear_params(self, hidden: int) -> int:
        return 2 * hidden * self.intermediate_size

    def active_linear_params(self, hidden: int) -> int:
        return self.linear_params(hidden)

    def matmul_io_per_token(self, hidden: int) -> int:
        return 2 * hidden + 2 * self.intermediate_size

    def weight_params_read(self, hidden: int, tokens: float) -> WeightParams:
        return WeightParams(linear=self.linear_params(hidden))

    def saved_terms(self, ctx: SavedActivationContext) -> list[ActivationTerm]:
        a, inter = ctx.act, self.intermediate_size
        b, f = ctx.linear_inputs(1 if ctx.savers("mlp_in") else 0, ctx.hidden_size, "h")
        n_d = ctx.savers("down_in")
        down = (n_d * 2 * inter) if (ctx.autocast and not ctx.full) else (a * inter if n_d else 0)
        return [
            ActivationTerm("mlp_in linear input", b, f),
            ActivationTerm(
                "activation",
                self.activation_saves * a * inter,
                f"{self.activation_saves} tensors of {a} * {inter} (the up output first)",
            ),
            ActivationTerm("down input", down, f"{'saved' if n_d else 'not saved'} activation output {a}*{inter}"),
        ]
