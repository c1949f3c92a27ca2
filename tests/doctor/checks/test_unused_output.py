"""no_gradient_reached / gradient_cut on a module whose output is computed and not used by the loss: the last
block's backcast in N-BEATS (the outside clean program batch17/clean/nbeats_bf16_autocast_cpu.py, from
https://runebook.dev/en/docs/pytorch/amp/torch.cpu.amp.autocast) and BERT's pooler beside the hidden states a head
reads. No cut was seen, so it is a cost (``performance``), not a bug; a validation under no_grad between the
steps is not the cause. A detach that cuts the graph is still a bug (tests/doctor/test_checks.py)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


class _Blocks(nn.Module):
    """Doubly residual blocks: each returns (backcast, forecast); the last backcast is never used."""

    def __init__(self):
        super().__init__()
        self.fc = nn.ModuleList(nn.Linear(12, 16) for _ in range(2))
        self.back = nn.ModuleList(nn.Linear(16, 12) for _ in range(2))
        self.fore = nn.ModuleList(nn.Linear(16, 3) for _ in range(2))

    def forward(self, x):
        forecast = 0.0
        for fc, back, fore in zip(self.fc, self.back, self.fore, strict=True):
            h = torch.relu(fc(x))
            x = x - back(h)
            forecast = forecast + fore(h)
        return forecast


def _run(model, batch, steps=3, validate=True):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for _ in range(steps):
            loss = batch(model)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if validate:
                with torch.no_grad():
                    batch(model)
    assert w.done and not w.check_errors, w.check_errors
    return w.findings


def test_the_last_blocks_unused_backcast_is_a_cost_not_a_bug():
    torch.manual_seed(0)
    found = _run(_Blocks(), lambda m: F.mse_loss(m(torch.randn(8, 12)), torch.randn(8, 3)))
    assert [f.check for f in found if f.kind == "bug"] == []
    (perf,) = [f for f in found if f.check == "no_gradient_reached"]
    assert perf.kind == "performance" and perf.evidence["params_without_grad"] == 2


def test_berts_unused_pooler_beside_a_head_on_the_hidden_states_is_a_cost_not_a_bug():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.BertConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
    )
    enc, head = transformers.BertModel(cfg), nn.Linear(16, 2)
    model = nn.ModuleDict({"enc": enc, "head": head})

    def batch(m):
        h = m["enc"](input_ids=torch.randint(0, 50, (4, 6))).last_hidden_state[:, 0]
        return F.cross_entropy(m["head"](h), torch.randint(0, 2, (4,)))

    found = _run(model, batch, validate=False)
    assert [f.check for f in found if f.kind == "bug"] == []
    assert {f.kind for f in found if f.check == "no_gradient_reached"} == {"performance"}
