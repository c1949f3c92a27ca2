"""ctc_target_is_blank: CTC targets that hold the loss's blank index, read up to each target's length, through
``nn.CTCLoss`` (which passes its blank by position) and ``F.ctc_loss``; symbols numbered past the blank, padding
after each length and a blank moved to the last class are silent. The class is the outside development program
batch13/bugs/phoneme_ctc_blank_collides_with_first_symbol.py (from https://github.com/Holmeyoung/crnn-pytorch/issues/34)."""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402

SYMBOLS, T, N = 6, 12, 4


def _run(first: int, *, blank: int = 0, padded: bool = False, module: bool = True):
    """Targets numbered from ``first``; returns the findings and the line that made the targets."""
    torch.manual_seed(0)
    model = nn.Linear(8, SYMBOLS + 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    lengths = torch.tensor([3, 4, 2, 3])
    ctc = nn.CTCLoss(blank=blank, zero_infinity=True)
    made = 0
    with watch(model, opt, steps=2) as w:
        for _ in range(2):
            made = inspect.currentframe().f_lineno + 1
            symbols = torch.randint(0, SYMBOLS, (N, 4)) + first
            targets = symbols.masked_fill(torch.arange(4)[None, :] >= lengths[:, None], 0) if padded else symbols
            logp = model(torch.randn(T, N, 8)).log_softmax(-1)
            in_lens = torch.full((N,), T)
            if module:
                loss = ctc(logp, targets, in_lens, lengths)
            else:
                loss = F.ctc_loss(logp, targets, in_lens, lengths, blank=blank, zero_infinity=True)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "ctc_target_is_blank"], made


@pytest.mark.parametrize("module", [True, False], ids=["CTCLoss", "F.ctc_loss"])
def test_symbols_numbered_from_the_blank_are_found_where_the_targets_were_made(module):
    (f,), made = _run(first=0, module=module)
    assert f.evidence["blank"] == 0 and f.evidence["blank_in_targets"] > 0
    assert f.file == __file__ and f.line in (made, made + 1)


@pytest.mark.parametrize(
    ("first", "blank", "padded"), [(1, 0, True), (1, 0, False), (0, SYMBOLS, False)], ids=["pad-zero", "from-1", "last"]
)
def test_symbols_past_the_blank_zero_padding_after_the_lengths_and_a_last_blank_are_silent(first, blank, padded):
    assert _run(first, blank=blank, padded=padded)[0] == []
