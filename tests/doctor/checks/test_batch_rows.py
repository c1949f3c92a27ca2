"""batch_repeats_samples: a training batch that holds far fewer distinct samples than its size, drawn by a
sampler or an index that repeats the same few samples; with the correct twins that must stay silent
(oversampling with replacement, repeated augmentation, token batches of an LM, data whose rows repeat by nature)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of as _line_of  # noqa: E402
from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, Dataset, Sampler, TensorDataset, WeightedRandomSampler  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _data(n: int = 300):
    g = torch.Generator().manual_seed(0)
    X = torch.randn(n, 12, generator=g)
    y = torch.cat([torch.zeros(n * 8 // 10), torch.ones(n - n * 8 // 10)]).long()
    return X, y


class _FirstFew(Sampler):
    """A hand-written sampler with an indexing bug: it cycles over the first three samples."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter([i % 3 for i in range(self.n)])

    def __len__(self):
        return self.n


class _Augmented(Dataset):
    def __init__(self, X, y):
        self.X, self.y = X, y

    def __len__(self):
        return len(self.X)

    def __getitem__(self, i):
        return self.X[i] + 0.1 * torch.randn(self.X.shape[1]), self.y[i]


class _Repeat(Sampler):
    """Repeated augmentation (DeiT's RASampler): each index drawn 4 times in a row."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter([i for i in torch.randperm(self.n).tolist() for _ in range(4)])

    def __len__(self):
        return 4 * self.n


def _loader(how: str):
    X, y = _data()
    ds = TensorDataset(X, y)
    if how == "class_weights":
        class_w = 1.0 / torch.bincount(y).double()
        sampler = WeightedRandomSampler(class_w, num_samples=len(y), replacement=True)  # made: class_weights
        return DataLoader(ds, batch_size=32, sampler=sampler)
    if how == "custom":
        return DataLoader(ds, batch_size=32, sampler=_FirstFew(len(y)))  # made: custom
    if how == "per_sample":  # oversampling with replacement, one weight per sample
        sample_w = (1.0 / torch.bincount(y).double())[y]
        return DataLoader(ds, batch_size=32, sampler=WeightedRandomSampler(sample_w, len(y), replacement=True))
    if how == "repeated_aug":
        return DataLoader(_Augmented(X, y), batch_size=32, sampler=_Repeat(len(y)))
    if how == "low_variety":  # binary features: rows repeat by nature, the sampler draws distinct samples
        Xb = (torch.randn(300, 3, generator=torch.Generator().manual_seed(1)) > 0).float()
        return DataLoader(TensorDataset(Xb.repeat(1, 4), y), batch_size=32, shuffle=True)
    raise ValueError(how)


def _run_loader(how: str):
    torch.manual_seed(0)
    with watch(steps=2) as w:
        loader = _loader(how)
        model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 2))
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        for step, (xb, yb) in enumerate(loader):
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step == 3:
                break
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "batch_repeats_samples"]


def test_a_sampler_given_one_weight_per_class_is_found_at_the_sampler():
    (f,) = _run_loader("class_weights")
    assert f.file == __file__ and f.line == _line_of("# made: class_weights", _loader)
    assert max(f.evidence["distinct_rows"]) <= 2 and f.evidence["distinct_index_share"] < 0.1


def test_a_hand_written_sampler_is_found_at_the_loader():
    (f,) = _run_loader("custom")
    assert f.line == _line_of("# made: custom", _loader) and f.evidence["distinct_rows"] == [3, 3]


def _manual(bug: bool):
    """No DataLoader: the batch indices are drawn by hand, over the classes instead of the samples."""
    torch.manual_seed(0)
    X, y = _data()
    class_w = 1.0 / torch.bincount(y).double()
    sample_w = class_w[y]
    model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            idx = torch.multinomial(class_w if bug else sample_w, 32, replacement=True)
            loss = F.cross_entropy(model(X[idx]), y[idx])  # forward: manual
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "batch_repeats_samples"]


def test_indices_drawn_by_hand_over_the_classes_are_found_at_the_forward():
    (f,) = _manual(bug=True)
    assert f.line == _line_of("# forward: manual", _manual) and f.evidence["distinct_index_share"] is None
    assert _manual(bug=False) == []


@pytest.mark.parametrize("how", ["per_sample", "repeated_aug", "low_variety"])
def test_oversampling_repeated_augmentation_and_repetitive_data_are_clean(how):
    assert _run_loader(how) == []


def test_token_batches_of_an_lm_are_clean():
    torch.manual_seed(0)
    ids = torch.randint(0, 50, (256, 16))
    loader = DataLoader(TensorDataset(ids), batch_size=32, shuffle=True)
    model = nn.Sequential(nn.Embedding(50, 16), nn.Linear(16, 50))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for step, (xb,) in enumerate(loader):
            logits = model(xb[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, 50), xb[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step == 3:
                break
    assert not [f for f in w.findings if f.check == "batch_repeats_samples"]


def test_one_hot_states_of_a_small_environment_without_a_loader_are_clean():
    # an RL buffer of one-hot states from a 6-state chain: a batch of 32 holds at most 6 distinct rows by nature
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            states = F.one_hot(torch.randint(0, 6, (32,)), 6).float()
            loss = F.smooth_l1_loss(model(states).max(1).values, torch.randn(32))
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    assert not [f for f in w.findings if f.check == "batch_repeats_samples"]


def _streams(expand: bool):
    """No DataLoader: parallel text streams (B, N) sliced along time, of a corpus that repeats one sentence so each
    stream is the same (outside development program batch13/clean/lstm_lm_tbptt_detached_hidden.py); or one
    stream expanded to the batch (stride 0: the same sample drawn B times)."""
    torch.manual_seed(0)
    corpus = torch.randint(0, 20, (50,)).repeat(16)  # 800 ids: one "sentence" of 50 repeated
    data = corpus.view(8, 100)  # 8 streams of 100: each starts at a multiple of 50, so all are equal
    model = nn.Sequential(nn.Embedding(20, 8), nn.Flatten(), nn.Linear(80, 20))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        for i in range(0, 60, 10):
            x = data[:1, i : i + 10].expand(8, 10) if expand else data[:, i : i + 10]
            loss = F.cross_entropy(model(x), data[:, i + 10])
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "batch_repeats_samples"]


def test_a_slice_of_repetitive_data_is_clean_and_one_sample_expanded_is_found():
    assert _streams(expand=False) == []
    assert len(_streams(expand=True)) == 1


def test_token_patterns_generated_in_the_loop_without_a_loader_are_clean():
    # the development program batch14/clean/peft_ia3_gpt2_feedforward_subset.py: each batch of 16 rows is drawn
    # from 6 cyclic token patterns, made in the loop; no sampler drew them
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(8, 16), nn.Flatten(), nn.Linear(16 * 16, 8))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            x = (torch.arange(16)[None, :] + torch.randint(0, 6, (16, 1))) % 6 + 1
            loss = F.cross_entropy(model(x), x[:, 0])
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    assert not [f for f in w.findings if f.check == "batch_repeats_samples"]
