"""weights_not_loaded and duplicate_module_in_container: each on a small in-process loop under watch(), with
the correct twins that must stay silent (a backbone loaded into a model with a new head, a strict load, peft-style
adapter loading; weight tying, one block called in a loop, a module shared by two containers)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of as _line_of  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _train(model, opt, steps: int = 3):
    X, y = torch.randn(32 * steps, 12), torch.randint(0, 3, (32 * steps,))
    for i in range(steps):
        out = model(X[32 * i : 32 * i + 32])
        loss = F.cross_entropy(out, y[32 * i : 32 * i + 32])
        opt.zero_grad()
        loss.backward()
        opt.step()


def _found(w, check):
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == check]


def _net():
    return nn.Sequential(nn.Linear(12, 48), nn.ReLU(), nn.Linear(48, 3))


class _Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = _net()


def _load(how: str):
    torch.manual_seed(0)
    with watch(steps=2) as w:
        net = _net()
        if how == "prefix":
            net.load_state_dict(_Wrapper().state_dict(), strict=False)  # load: prefix
        elif how == "nested":  # the whole checkpoint dict, not its "state_dict" entry
            ckpt = {"state_dict": _net().state_dict(), "epoch": 3, "optimizer": {}}
            net.load_state_dict(ckpt, False)  # load: nested
        elif how == "new_head":  # a backbone whose old head is dropped: only the new head is missing
            big = nn.Sequential(nn.Linear(12, 256), nn.ReLU(), nn.Linear(256, 3))
            sd = {
                k: v for k, v in nn.Sequential(nn.Linear(12, 256), nn.ReLU(), nn.Linear(256, 10)).state_dict().items()
            }
            sd = {k: v for k, v in sd.items() if not k.startswith("2.")} | {"fc.weight": torch.zeros(10, 256)}
            big.load_state_dict(sd, strict=False)
            net = big
        elif how == "strict":
            net.load_state_dict(_net().state_dict())
        elif how == "adapter":  # peft-style: the frozen base weights are missing by design
            net.requires_grad_(False)
            net.add_module("lora", nn.Linear(3, 3))
            net.load_state_dict({"lora.weight": torch.eye(3), "lora.bias": torch.zeros(3), "x.extra": 1}, strict=False)
            net.lora.requires_grad_(True)
        opt = torch.optim.Adam([p for p in net.parameters() if p.requires_grad], lr=1e-3)
        _train(net, opt)
    return _found(w, "weights_not_loaded")


def test_a_non_strict_load_that_filled_nothing_is_found_at_the_call():
    (f,) = _load("prefix")
    assert f.file == __file__ and f.line == _line_of("# load: prefix", _load)
    assert f.evidence["missing_param_share"] == 1.0 and f.evidence["matched_keys"] == 0
    (g,) = _load("nested")
    assert g.line == _line_of("# load: nested", _load) and g.evidence["unexpected_keys"] == 3


def test_a_new_head_a_strict_load_and_adapter_loading_are_clean():
    assert _load("new_head") == []
    assert _load("strict") == []
    assert _load("adapter") == []


class _Block(nn.Module):
    def __init__(self, d=12):
        super().__init__()
        self.lin = nn.Linear(d, d)

    def forward(self, x):
        return x + torch.tanh(self.lin(x))


class _Heads(nn.Module):
    def __init__(self, how: str):
        super().__init__()
        self.emb = nn.Linear(12, 12)
        act = nn.ReLU()
        if how == "repeat":
            self.blocks = nn.ModuleList([_Block()] * 3)  # container: repeat
        elif how == "sequential":
            layers = []
            blk = _Block()
            for _ in range(2):
                layers += [blk, act]
            self.blocks = nn.Sequential(*layers)  # container: sequential
        elif how == "dict":
            shared = _Block()
            self.blocks = nn.ModuleDict({"a": shared, "b": shared})  # container: dict
        elif how == "fresh":
            self.blocks = nn.ModuleList([_Block() for _ in range(3)])
        elif how == "loop":  # ALBERT-style: one block, called several times in forward
            self.block = _Block()
            self.blocks = nn.Sequential(act, nn.Identity(), act)  # a parameter-free layer twice: harmless
        elif how == "two_parents":  # one block shared on purpose by two different containers
            shared = _Block()
            self.enc = nn.ModuleList([shared, _Block()])
            self.dec = nn.ModuleList([_Block(), shared])
        self.how = how
        self.head = nn.Linear(12, 3)
        if how == "loop":
            self.tied = nn.Linear(12, 12)
            self.tied.weight = self.emb.weight  # weight tying: the same Parameter under two modules

    def forward(self, x):
        h = self.emb(x)
        if self.how == "loop":
            for _ in range(3):
                h = self.block(h)
            h = self.tied(self.blocks(h))
        elif self.how == "two_parents":
            for b in [*self.enc, *self.dec]:
                h = b(h)
        else:
            for b in self.blocks.values() if isinstance(self.blocks, nn.ModuleDict) else self.blocks:
                h = b(h)
        return self.head(h)


def _dup(how: str):
    torch.manual_seed(0)
    with watch(steps=2) as w:
        model = _Heads(how)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        _train(model, opt)
    return _found(w, "duplicate_module_in_container")


@pytest.mark.parametrize("how", ["repeat", "sequential", "dict"])
def test_one_block_at_several_places_of_a_container_is_found_at_the_assignment(how):
    (f,) = _dup(how)
    assert f.file == __file__ and f.line == _line_of(f"# container: {how}", _Heads.__init__)
    assert f.evidence["places"] >= 2 and f.evidence["module"] == "_Block"


@pytest.mark.parametrize("how", ["fresh", "loop", "two_parents"])
def test_fresh_blocks_a_loop_tying_and_two_containers_are_clean(how):
    assert _dup(how) == []
