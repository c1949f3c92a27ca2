"""module_never_runs: a trainable module an optimizer steps whose forward never runs in the watched steps, on
small in-process loops under watch(), with correct twins that must stay silent (batch 4's DDP program, written
from a find_unused_parameters report, calls stage1 twice and never stage2)."""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


class TwoStage(nn.Module):
    def __init__(self, slip: bool):
        super().__init__()
        self.slip = slip
        self.inp = nn.Linear(8, 16)
        self.stage1 = nn.Sequential(nn.Linear(16, 16), nn.ReLU())
        self.stage2 = nn.Sequential(nn.Linear(16, 16), nn.ReLU())
        self.head = nn.Linear(16, 2)

    def forward(self, x):
        h = self.stage1(F.relu(self.inp(x)))
        h = self.stage1(h) if self.slip else self.stage2(h)  # the second stage
        return self.head(h)


class Unused(nn.Module):
    """A decoder kept on the model (and in the optimizer) that the training forward never calls."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(8, 16)
        self.decoder = nn.Linear(16, 8)
        self.head = nn.Linear(16, 2)

    def forward(self, x):
        return self.head(torch.tanh(self.encoder(x)))


class Experts(nn.Module):
    """A mixture whose router picks one expert per batch: experts idle for two steps are not a bug."""

    def __init__(self):
        super().__init__()
        self.experts = nn.ModuleList(nn.Linear(8, 2) for _ in range(4))

    def forward(self, x):
        return self.experts[int(x.sum() > 1e9)](x)  # always expert 0 here


class AuxEveryOther(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 16)
        self.head = nn.Linear(16, 2)
        self.aux = nn.Linear(16, 2)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        h = torch.tanh(self.body(x))
        out = self.head(h)
        return out + 0.1 * self.aux(h) if self.calls % 2 == 1 else out


def _run(model, steps=3):
    torch.manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    X, y = torch.randn(16 * steps, 8), torch.randint(0, 2, (16 * steps,))
    with watch(model, opt, steps=2) as w:
        for i in range(steps):
            loss = F.cross_entropy(model(X[16 * i : 16 * i + 16]), y[16 * i : 16 * i + 16])
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "module_never_runs"]


def test_a_sibling_called_twice_is_named_at_its_second_call():
    torch.manual_seed(0)
    (f,) = _run(TwoStage(slip=True))
    lines, first = inspect.getsourcelines(TwoStage.forward)
    assert f.line == first + next(i for i, t in enumerate(lines) if "the second stage" in t)
    assert f.evidence["module"] == "stage2.0" and f.evidence["twin_ran_twice"] == "stage1.0"


def test_a_module_never_called_is_found():
    (f,) = _run(Unused())
    assert f.evidence["module"] == "decoder" and f.evidence["twin_ran_twice"] is None


@pytest.mark.parametrize("model", [lambda: TwoStage(slip=False), Experts, AuxEveryOther])
def test_modules_that_run_or_are_picked_per_input_are_clean(model):
    assert _run(model()) == []


def test_a_frozen_unused_module_is_clean():
    model = Unused()
    model.decoder.requires_grad_(False)
    assert _run(model) == []


class Mixer(nn.Module):
    """A block whose fast path reads its projection's weight instead of calling it (Mamba's fused kernel takes
    the weight tensor): a peft LoRA wrapper on ``in_proj`` never runs, its adapters never enter the graph."""

    def __init__(self, fast: bool):
        super().__init__()
        self.fast = fast
        self.in_proj, self.out_proj = nn.Linear(8, 16), nn.Linear(16, 2)

    def forward(self, x):
        h = F.linear(x, self.in_proj.weight, self.in_proj.bias) if self.fast else self.in_proj(x)  # FAST PATH
        return self.out_proj(torch.tanh(h))


@pytest.mark.parametrize("fast", [True, False])
def test_adapters_whose_wrapper_a_forward_bypasses_are_named_where_it_reads_the_weight(fast):
    # the outside development program batch18/bugs/peft_lora_mixer_fast_path_weight.py (from
    # https://github.com/state-spaces/mamba/issues/279): lora_A/lora_B are ModuleDicts keyed by the adapter, none of
    # whose members ran, so they are no per-input pick
    peft = pytest.importorskip("peft")
    torch.manual_seed(0)
    model = peft.get_peft_model(Mixer(fast), peft.LoraConfig(r=4, target_modules=["in_proj", "out_proj"]))
    found = _run(model)
    if not fast:
        assert found == []
        return
    (f,) = found  # lora_A and lora_B share the line: one finding
    assert f.evidence["module"].split(".")[-2] in ("lora_A", "lora_B") and "in_proj" in f.evidence["module"]
    lines, first = inspect.getsourcelines(Mixer.forward)
    assert f.line == first + next(i for i, t in enumerate(lines) if "# FAST PATH" in t)
