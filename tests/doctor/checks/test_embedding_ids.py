"""embedding_indexed_by_other_ids: a biased matrix factorisation whose user bias is looked up with the item ids
(the class of https://github.com/lenskit/lkpy/pull/265), found at the lookup's line, with the correct twin that
must stay silent; a language model's token and position tables (each its own ids) stay silent too."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of as _line_of  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402

CHECK = "embedding_indexed_by_other_ids"
USERS, ITEMS = 60, 25


class BiasedMF(nn.Module):
    def __init__(self, swapped: bool) -> None:
        super().__init__()
        self.p, self.q = nn.Embedding(USERS, 8), nn.Embedding(ITEMS, 8)
        self.bu, self.bi = nn.Embedding(USERS, 1), nn.Embedding(ITEMS, 1)
        self.swapped = swapped

    def forward(self, u, i):
        user_bias = self.bu(i if self.swapped else u).squeeze(1)  # the user bias lookup
        return (self.p(u) * self.q(i)).sum(1) + user_bias + self.bi(i).squeeze(1)


def _train(model: nn.Module):
    torch.manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            u, i = torch.randint(0, USERS, (32,)), torch.randint(0, ITEMS, (32,))
            loss = F.mse_loss(model(u, i), torch.rand(32) * 5)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert not w.check_errors
    return [f for f in w.findings if f.check == CHECK]


def test_a_user_table_looked_up_with_item_ids_is_found_at_the_lookup():
    (f,) = _train(BiasedMF(swapped=True))
    assert f.file == __file__ and f.line == _line_of("# the user bias lookup", BiasedMF.forward)
    assert f.evidence["rows"] == USERS and f.evidence["other_rows"] == ITEMS


def test_each_table_with_its_own_ids_is_silent():
    assert _train(BiasedMF(swapped=False)) == []


class TinyLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tok, self.pos, self.out = nn.Embedding(50, 16), nn.Embedding(32, 16), nn.Linear(16, 50)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1])
        return self.out(self.tok(ids) + self.pos(pos)[None])


def test_token_and_position_tables_are_silent():
    torch.manual_seed(0)
    model = TinyLM()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            ids = torch.randint(0, 50, (4, 12))
            loss = F.cross_entropy(model(ids).reshape(-1, 50), ids.roll(-1, 1).reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert [f for f in w.findings if f.check == CHECK] == []
