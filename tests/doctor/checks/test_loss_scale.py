"""ignored_real_class and ddp_loss_divided_by_world (checks/loss_scale.py): a tagger whose ignore_index is a real
tag (batch 4's dev program, written from a public report), against its correct twin whose ignored label sits only
at padding; the DDP scale's divisor read from the graph (the two-rank run is batch 4's dev DDP program, run by
benchmarks/bench_doctor.py)."""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402
from expkit.doctor.checks.loss_scale import _divisor  # noqa: E402


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(40, 16, padding_idx=0)
        self.rnn = nn.GRU(16, 16, batch_first=True)
        self.out = nn.Linear(16, 4)

    def forward(self, tok):
        return self.out(self.rnn(self.emb(tok))[0])


def _tag(real_tag_ignored: bool, criterion: bool = False):
    torch.manual_seed(0)
    tokens = torch.randint(1, 40, (48, 10))
    lengths = torch.randint(4, 11, (48,))
    pad = torch.arange(10)[None, :] >= lengths[:, None]
    tokens[pad] = 0
    tags = torch.randint(1, 4, (48, 10))
    if real_tag_ignored:
        tags[torch.rand(48, 10) < 0.5] = 0  # tag 0 is also a real tag ("O")
    tags[pad] = 0
    model = Tagger()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_of = nn.CrossEntropyLoss(ignore_index=0)  # the criterion
    with watch(model, opt, steps=2) as w:
        for i in range(0, 48, 16):
            logits = model(tokens[i : i + 16])
            if criterion:  # the index given where the criterion was built, earlier
                loss = loss_of(logits.flatten(0, 1), tags[i : i + 16].flatten())
            else:
                loss = F.cross_entropy(logits.flatten(0, 1), tags[i : i + 16].flatten(), ignore_index=0)  # the loss
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "ignored_real_class"]


def test_a_real_tag_used_as_ignore_index_is_found_at_the_loss():
    (f,) = _tag(real_tag_ignored=True)
    lines, first = inspect.getsourcelines(_tag)
    assert f.line == first + next(i for i, t in enumerate(lines) if "# the loss" in t)
    assert f.evidence["ignore_index"] == 0 and f.evidence["distinct_ids"] >= 3


def test_an_ignore_index_given_to_a_criterion_built_earlier_is_named_there():
    (f,) = _tag(real_tag_ignored=True, criterion=True)
    lines, first = inspect.getsourcelines(_tag)
    assert f.line == first + next(i for i, t in enumerate(lines) if "# the criterion" in t)


def test_an_ignored_label_only_at_padding_is_clean():
    assert _tag(real_tag_ignored=False) == []


def test_the_divisor_is_read_from_a_division_or_a_multiplication():
    x = torch.tensor(3.0, requires_grad=True)
    loss = x * 2
    assert _divisor((loss / 2).grad_fn) == 2.0
    assert _divisor((loss * 0.25).grad_fn) == 4.0
    assert _divisor((loss + 1).grad_fn) is None


def test_a_next_token_model_whose_padding_is_the_ignored_class_zero_is_clean():
    # the development programs batch14/clean/gru_lm_grad_accumulation_normalized_by_token_count.py and
    # handbuilt_causal_and_key_padding_mask_decoder_lm.py: the targets are the inputs shifted, so at each row's first
    # padded target the input is the row's last real token (many ids), yet the ignored positions are one run at the
    # row's end: padding. The same ids ignored at positions scattered through the rows stay a finding
    torch.manual_seed(0)
    rows = torch.randint(1, 40, (32, 13))
    rows[torch.arange(13)[None, :] >= torch.randint(4, 13, (32,))[:, None]] = 0  # right padding, pad id 0
    model = nn.Sequential(nn.Embedding(40, 16), nn.Linear(16, 40))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def run(targets: torch.Tensor) -> list:
        with watch(model, opt, steps=2) as w:
            for i in range(0, 32, 16):
                x, y = rows[i : i + 16, :-1], targets[i : i + 16]
                loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten(), ignore_index=0)
                opt.zero_grad()
                loss.backward()
                opt.step()
        assert not w.check_errors, w.check_errors
        return [f for f in w.findings if f.check == "ignored_real_class"]

    assert run(rows[:, 1:]) == []
    scattered = rows[:, 1:].clone()
    scattered[torch.rand(scattered.shape) < 0.4] = 0  # class 0 also inside the rows: a real class ignored
    assert len(run(scattered)) == 1
