"""sampler_without_set_epoch: a shuffling DistributedSampler entering its second epoch with the same epoch.
num_replicas/rank are given, so no process group is needed."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _epochs(*, set_epoch: bool, shuffle: bool = True, peek: bool = False):
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,)))
    sampler = DistributedSampler(data, num_replicas=2, rank=0, shuffle=shuffle)
    loader = DataLoader(data, batch_size=8, sampler=sampler)  # 8 samples on this rank: one step per epoch
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        for epoch in range(2):
            if set_epoch:
                sampler.set_epoch(epoch)
            if peek:  # the program iterates the sampler itself to log the epoch's first index
                next(iter(sampler))
            for xb, yb in loader:
                opt.zero_grad()
                nn.functional.cross_entropy(model(xb), yb).backward()
                opt.step()
    assert not w.check_errors
    return [f for f in w.findings if f.check == "sampler_without_set_epoch"]


def test_second_epoch_without_set_epoch_is_found_with_the_sampler_state():
    (f,) = _epochs(set_epoch=False)
    assert f.evidence == {"sampler_epoch": 0, "epochs_started": 2, "num_replicas": 2, "samples_per_rank": 8}
    assert f.step == 2  # seen before the second watched step


def test_set_epoch_or_no_shuffle_is_clean():
    assert _epochs(set_epoch=True) == []
    # the outside development program batch19/clean/ddp_torchrun_sampler_set_epoch_no_sync_accum.py (from
    # https://github.com/Spijkervet/SimCLR/pull/26) logs next(iter(sampler)) before each epoch's loader loop
    assert _epochs(set_epoch=True, peek=True) == []
    (f,) = _epochs(set_epoch=False, peek=True)  # the loader's second epoch still repeats the first's order
    assert f.evidence["epochs_started"] == 2
    assert _epochs(set_epoch=False, shuffle=False) == []  # without shuffling the epoch changes nothing


# The loop lives in a file of its own: the first-epoch rule reads the loop's files for ``set_epoch``, and this test
# file names it. Each variant writes the loop the way a user might (inner loop in the same function, or in a
# helper called from the epoch loop) and ends after the first epoch's first step: only the source rule can see it.
LOOP_PROGRAM = """
import torch
from torch import nn


def one_epoch(loader, model, opt):
    for xb, yb in loader:
        opt.zero_grad()
        nn.functional.cross_entropy(model(xb), yb).backward()
        opt.step()
        return


def nested(loader, model, opt, epochs):
    for epoch in range(epochs):
        for xb, yb in loader:
            opt.zero_grad()
            nn.functional.cross_entropy(model(xb), yb).backward()
            opt.step()
            return


def by_helper(loader, model, opt, epochs):
    for epoch in range(epochs):
        one_epoch(loader, model, opt)
        return
"""


def _first_epoch(tmp_path, entry: str, extra: str = ""):
    import importlib.util

    path = tmp_path / f"loop_{entry}.py"
    path.write_text(LOOP_PROGRAM + extra)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
    loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data, num_replicas=2, rank=0))
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        if entry == "one_epoch":
            mod.one_epoch(loader, model, opt)
        else:
            getattr(mod, entry)(loader, model, opt, 3)
    assert not w.check_errors
    return [f for f in w.findings if f.check == "sampler_without_set_epoch"], path


# named at the epoch loop's first line, where set_epoch belongs (the loader's loop in it, or the helper's call)
@pytest.mark.parametrize("entry", ["nested", "by_helper"])
def test_an_epoch_loop_without_set_epoch_in_its_files_is_found_at_the_first_epoch(tmp_path, entry):
    found, path = _first_epoch(tmp_path, entry)
    (f,) = found
    assert f.file == str(path) and "for epoch in range(epochs)" in path.read_text().splitlines()[f.line - 1]
    assert f.step == 0 and f.evidence["sampler_epoch"] == 0  # before the first step


def test_one_pass_or_a_set_epoch_in_the_files_is_clean_at_the_first_epoch(tmp_path):
    assert _first_epoch(tmp_path, "one_epoch")[0] == []  # one pass: the epoch never changes
    extra = "\n\ndef set_each(loader, epoch):\n    loader.sampler.set_epoch(epoch)\n"
    assert _first_epoch(tmp_path, "nested", extra)[0] == []
