"""The char LM: parameter count by hand, tied head, step-0 loss near ln V."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from expkit.train import CharLM, CharLMConfig, count_parameters, flops_per_token


def test_default_parameter_count_matches_hand_derivation():
    # 4 blocks x (12 d^2 + 2 layer norms x 2d) + wte V d + wpe 256 d + ln_f 2d, d = 128, V = 128, head tied
    d = 128
    expected = 4 * (12 * d * d + 4 * d) + 128 * d + 256 * d + 2 * d
    assert expected == 837_888
    assert count_parameters(CharLM(CharLMConfig())) == expected


def test_head_is_tied_to_embedding():
    model = CharLM(CharLMConfig(n_layer=1, n_embd=32, n_head=2))
    assert model.head.weight is model.wte.weight
    names = [n for n, _ in model.named_parameters()]
    assert "head.weight" not in names  # counted once


def test_first_loss_is_near_ln_vocab_on_random_targets():
    torch.manual_seed(0)
    model = CharLM(CharLMConfig())
    ids = torch.randint(128, (8, 129))
    logits = model(ids[:, :-1])  # (8, 128, 128)
    loss = F.cross_entropy(logits.view(-1, 128), ids[:, 1:].reshape(-1)).item()
    # init std 0.02 gives logits with std ~0.2: loss = ln V + var/2 + sampling noise, within 0.1 nats
    assert abs(loss - math.log(128)) < 0.1


def test_sequence_longer_than_block_size_is_refused():
    model = CharLM(CharLMConfig(n_layer=1, n_embd=32, n_head=2, block_size=16))
    with pytest.raises(ValueError, match="exceeds block_size 16"):
        model(torch.zeros(1, 17, dtype=torch.long))


def test_config_validation_names_the_field():
    with pytest.raises(ValueError, match="n_embd=30 is not divisible by n_head=4"):
        CharLMConfig(n_embd=30, n_head=4)


def test_flops_per_token_is_six_n_plus_attention():
    cfg = CharLMConfig()
    # 6 x (4 x 12 x 128^2 + 128 x 128) + 12 x 4 x 128 x 128 (T = 128)
    assert flops_per_token(cfg, seq_len=128) == 6 * (786_432 + 16_384) + 786_432
