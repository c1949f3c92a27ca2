"""The tiny decoder-only character LM: ASCII vocabulary (V = 128), tied head, ~840K parameters.

A GPT in the nanoGPT mould (karpathy/nanoGPT model.py): pre-norm blocks, causal self-attention through
``scaled_dot_product_attention``, GELU MLP, no bias in linear layers, no dropout by default.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["CharLM", "CharLMConfig", "count_parameters", "flops_per_token"]

ASCII_VOCAB = 128  # code points 0..127: the whole vocabulary, no tokenizer to train


@dataclass(frozen=True)
class CharLMConfig:
    """Shape of the char LM. The default has 837,888 parameters (the seed's "84 万", C3.4).

    4 layers x 12 d^2 (attention 4 d^2 + MLP 8 d^2) at d = 128 is 786,432; embeddings 128 x 128 and
    positions 256 x 128 and the layer norms bring it to 840,064; the head is tied to the embedding.
    """

    vocab_size: int = ASCII_VOCAB
    block_size: int = 256
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0

    def __post_init__(self) -> None:
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            if getattr(self, name) < 1:
                raise ValueError(f"CharLMConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.n_embd % self.n_head:
            raise ValueError(f"CharLMConfig: n_embd={self.n_embd} is not divisible by n_head={self.n_head}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"CharLMConfig.dropout must be in [0, 1), got {self.dropout}")


class _SelfAttention(nn.Module):
    def __init__(self, cfg: CharLMConfig) -> None:
        super().__init__()
        self.n_head = cfg.n_head
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=False)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=False)
        self.dropout = cfg.dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)  # 3 x (B, T, C)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        y = F.scaled_dot_product_attention(
            q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0
        )  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.proj(y)


class _MLP(nn.Module):
    def __init__(self, cfg: CharLMConfig) -> None:
        super().__init__()
        self.fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd, bias=False)
        self.proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(F.gelu(self.fc(x)))


class _Block(nn.Module):
    def __init__(self, cfg: CharLMConfig) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.n_embd)
        self.attn = _SelfAttention(cfg)
        self.ln2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = _MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class CharLM(nn.Module):
    """Decoder-only char LM. ``forward(idx) -> logits (B, T, V)``; the loss is the loop's business.

    Initialisation (nanoGPT/GPT-2): normal(0, 0.02), residual projections scaled by 1/sqrt(2 L).
    With the tied head the step-0 logits have std about 0.02 * sqrt(d) = 0.23, so the first loss
    is ln V + ~0.03 (C3.4).

    Example:
        >>> model = CharLM(CharLMConfig())
        >>> count_parameters(model)
        837888
    """

    def __init__(self, cfg: CharLMConfig) -> None:
        super().__init__()
        self.config = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(_Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.head.weight = self.wte.weight  # tied: one (V, d) matrix embeds and un-embeds
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("proj.weight"):  # residual projections, GPT-2 paper section 2.3
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        _, T = idx.shape  # (B, T)
        if T > self.config.block_size:  # noqa: SIM300 - T is the sequence length (nanoGPT naming), not a constant
            raise ValueError(f"sequence length {T} exceeds block_size {self.config.block_size}")
        pos = torch.arange(T, device=idx.device)  # (T,)
        x = self.drop(self.wte(idx) + self.wpe(pos))  # (B, T, d)
        for block in self.blocks:
            x = block(x)  # (B, T, d)
        return self.head(self.ln_f(x))  # (B, T, V)


def count_parameters(model: nn.Module) -> int:
    """Distinct parameters (a tied matrix counts once)."""
    return sum(p.numel() for p in model.parameters())


def flops_per_token(cfg: CharLMConfig, *, seq_len: int) -> int:
    """Training FLOPs per token: 6 N (forward + backward matmuls) + 12 L T d (attention scores).

    Reference: Kaplan et al. 2020 (arXiv:2001.08361) Table 1 and PaLM (arXiv:2204.02311) Appendix B,
    as nanoGPT's ``estimate_mfu``. N counts the non-embedding weights plus the tied head.
    """
    d, L = cfg.n_embd, cfg.n_layer
    n_matmul = L * 12 * d * d + cfg.vocab_size * d  # blocks + head (embedding lookups are not matmuls)
    return 6 * n_matmul + 12 * L * seq_len * d
