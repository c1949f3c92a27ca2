"""The simulated device capacity: live bytes follow frees; an allocation past the cap raises a real OOM."""

from __future__ import annotations

import pytest
import torch

from expkit.diagnose import parse_oom_message
from expkit.memory.capacity import capped_memory


def test_live_and_peak_bytes_follow_allocations_and_frees():
    with capped_memory(10**8) as cap:
        a = torch.zeros(1000, 250)  # 1,000,000 B
        b = a @ torch.ones(250, 250)  # + 250,000 B (the ones) + 1,000,000 B (the product)
        del b
        view = a[:10]  # a view: no new storage
        assert cap.live_bytes == 1_250_000 or cap.live_bytes == 1_000_000  # the ones may already be freed
    assert cap.peak_bytes == 2_250_000
    del view


def test_allocation_past_the_cap_raises_cuda_format_oom():
    with pytest.raises(torch.OutOfMemoryError) as err, capped_memory(3 * 2**20):
        keep = [torch.zeros(2**18) for _ in range(4)]  # 1 MiB each: the 4th passes 3 MiB
        del keep
    info = parse_oom_message(str(err.value))
    assert info is not None and info.requested_bytes == 2**20 and info.capacity_bytes == 3 * 2**20


def test_loading_keeps_tied_embeddings_tied():
    """to_empty alone unties a tied lm_head from the embedding (two tensors, vocab x hidden counted twice)."""
    from transformers import AutoConfig

    from expkit.memory.capacity import load_empty

    for tied in (True, False):
        cfg = AutoConfig.for_model(
            "qwen2",
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            vocab_size=1000,
            tie_word_embeddings=tied,
        )
        model = load_empty(cfg)
        assert (model.lm_head.weight is model.model.embed_tokens.weight) is tied
        n = sum(p.numel() for p in model.parameters())
        assert n == 138_304 + (0 if tied else 64_000)
