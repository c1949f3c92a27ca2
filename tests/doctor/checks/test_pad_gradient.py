"""loss_reads_padding: a loss whose gradient reaches a model's outputs at padded positions (a mean over
``last_hidden_state`` without the mask, BERT-whitening#13:
https://github.com/autoliuweijie/BERT-whitening-pytorch/issues/13), beside the poolings that leave padding out."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of as _line_of  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _pooled(pooling: str):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=16,
    )  # fmt: skip
    encoder, head = BertModel(cfg, add_pooling_layer=False), nn.Linear(16, 2)
    opt = torch.optim.AdamW([*encoder.parameters(), *head.parameters()], lr=1e-3)
    with watch(steps=2) as w:
        for _ in range(3):
            lengths = torch.randint(3, 12, (8,))
            mask = (torch.arange(12)[None] < lengths[:, None]).long()
            ids = torch.randint(5, 64, (8, 12)) * mask
            h = encoder(input_ids=ids, attention_mask=mask).last_hidden_state
            if pooling == "mean":
                sent = h.mean(dim=1)  # the unmasked mean
            elif pooling == "max":
                sent = h.max(dim=1).values
            elif pooling == "masked_mean":
                sent = (h * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
            elif pooling == "masked_max":
                sent = h.masked_fill(mask[..., None] == 0, float("-inf")).max(dim=1).values
            else:  # the first token ([CLS])
                sent = h[:, 0]
            loss = F.cross_entropy(head(sent), (lengths > 7).long())
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "loss_reads_padding"]


def test_a_mean_over_the_sequence_without_the_mask_is_found_at_the_mean():
    (f,) = _pooled("mean")
    assert f.line == _line_of("# the unmasked mean", _pooled)
    assert f.evidence["max_grad_at_padding"] > 0


def test_a_max_over_padding_is_found():
    assert len(_pooled("max")) == 1


@pytest.mark.parametrize("pooling", ["masked_mean", "masked_max", "cls"])
def test_poolings_that_leave_padding_out_are_silent(pooling):
    assert _pooled(pooling) == []


def test_a_gradient_the_hook_cannot_read_is_passed_over_without_breaking_the_backward():
    from expkit.doctor.checks.pad_gradient import LossReadsPadding

    check = LossReadsPadding()
    pad = torch.tensor([[False, True, True]])
    check._measure("Model", torch.ones(2, 5, 4), pad)  # another shape: an IndexError inside a backward hook
    assert check.seen == []
