"""reshape_reorders_axes: a view/reshape to a reordering of a tensor's own sizes on the training path (batch 1's
dev program view_instead_of_permute, Karpathy's recipe), written three ways, and correct reshapes that must stay
silent."""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


class Net(nn.Module):
    def __init__(self, how: str):
        super().__init__()
        self.how = how
        self.conv = nn.Conv1d(4, 8, 3, padding=1)
        self.fc = nn.Linear(8, 2)

    def forward(self, x):  # x: (B, 4, L)
        h = torch.relu(self.conv(x))  # (B, 8, L)
        b, c, n = h.shape
        if self.how == "view":
            h = h.view(b, n, c)  # reshaped
        elif self.how == "reshape":
            h = h.reshape(b, n, c)  # reshaped
        elif self.how == "torch.reshape":
            h = torch.reshape(h, (b, n, c))  # reshaped
        elif self.how == "permute":
            h = h.permute(0, 2, 1)
        elif self.how == "flatten":
            return self.fc(h.view(b, c, n).mean(2))
        return self.fc(h).mean(1)


def _run(how):
    torch.manual_seed(0)
    model = Net(how)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    X, y = torch.randn(12, 4, 9), torch.randint(0, 2, (12,))
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            opt.zero_grad()
            F.cross_entropy(model(X), y).backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "reshape_reorders_axes"]


@pytest.mark.parametrize("how", ["view", "reshape", "torch.reshape"])
def test_a_reshape_that_reorders_axes_is_found_at_its_line(how):
    (f,) = _run(how)
    lines, first = inspect.getsourcelines(Net.forward)
    marked = [first + i for i, t in enumerate(lines) if "# reshaped" in t]
    assert f.line in marked and f.evidence["shape_after"] == [12, 9, 8]


@pytest.mark.parametrize("how", ["permute", "flatten"])
def test_permute_and_shape_keeping_views_are_clean(how):
    assert _run(how) == []


def test_a_library_reshape_whose_sizes_coincide_is_clean():
    # torch's multi-head attention views q (T, B, E) as (T, B * heads, E / heads): (32, 16, 64) -> (32, 64, 16)
    # at B=16, 4 heads, E=64 (the own suite's char_transformer was a false alarm before the user-code rule)
    torch.manual_seed(0)
    model = nn.Sequential(nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0), nn.Linear(64, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    X, y = torch.randn(32, 16, 64), torch.randint(0, 2, (32, 16))
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            opt.zero_grad()
            F.cross_entropy(model(X).reshape(-1, 2), y.reshape(-1)).backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    assert [f for f in w.findings if f.check == "reshape_reorders_axes"] == []


# class_axis_flattened: a segmentation net's (B, C, H, W) logits viewed as (-1, C) before cross_entropy
# (https://stackoverflow.com/questions/57155970), beside the layouts that keep each row one position's scores.


def _segmenter(how: str):
    from source_lines import line_of

    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 4, 1))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    with watch(steps=2) as w:
        for _ in range(3):
            img, target = torch.randn(2, 3, 6, 5), torch.randint(0, 4, (2, 6, 5))
            logits = net(img)
            if how == "view":
                loss = F.cross_entropy(logits.view(-1, 4), target.view(-1))  # the flattening
            elif how == "permuted":
                loss = F.cross_entropy(logits.permute(0, 2, 3, 1).reshape(-1, 4), target.reshape(-1))
            elif how == "sequence":  # (B, T, C) logits of a tagger: the class axis is already last
                loss = F.cross_entropy(logits.flatten(2).transpose(1, 2).reshape(-1, 4), target.view(-1))
            else:  # (N, C, H, W) handed over as it is
                loss = F.cross_entropy(logits, target)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    found = [f for f in w.findings if f.check == "class_axis_flattened"]
    return found, line_of("# the flattening", _segmenter)


def test_channels_first_logits_viewed_as_rows_of_classes_are_found_at_the_view():
    (f,), line = _segmenter("view")
    assert f.line == line and f.evidence["shape_before"] == [2, 4, 6, 5]


@pytest.mark.parametrize("how", ["permuted", "sequence", "dense"])
def test_logits_with_the_class_axis_moved_last_or_kept_whole_are_silent(how):
    assert _segmenter(how)[0] == []


class Attention(nn.Module):
    """Hand-written multi-head self-attention whose heads are merged with or without the transpose (the outside
    development program batch14/bugs/mha_head_merge_reshape_without_transpose.py, from
    https://github.com/meta-pytorch/opacus/pull/825)."""

    def __init__(self, transpose: bool):
        super().__init__()
        self.transpose = transpose
        self.qkv = nn.Linear(32, 96)
        self.out = nn.Linear(32, 5)

    def forward(self, x):  # (B, T, 32), 4 heads of 8
        b, t, _ = x.shape
        q, k, v = (z.view(b, t, 4, 8).transpose(1, 2) for z in self.qkv(x).chunk(3, dim=-1))
        h = (q @ k.transpose(-2, -1) / 8**0.5).softmax(-1) @ v  # (B, 4, T, 8)
        if self.transpose:
            h = h.transpose(1, 2)
        h = h.reshape(b, t, 32)  # heads merged
        return self.out(h)


@pytest.mark.parametrize("seq", [6, 16])
def test_attention_heads_merged_without_the_transpose_are_found_at_the_merge(seq):
    for transpose in (False, True):
        torch.manual_seed(0)
        model = Attention(transpose)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        with watch(model, opt, steps=2) as w:
            for _ in range(3):
                opt.zero_grad()
                out = model(torch.randn(8, seq, 32))
                F.cross_entropy(out.flatten(0, 1), torch.randint(0, 5, (8 * seq,))).backward()
                opt.step()
        assert not w.check_errors, w.check_errors
        found = [f for f in w.findings if f.check == "reshape_reorders_axes"]
        if transpose:
            assert found == []
        else:
            lines, first = inspect.getsourcelines(Attention.forward)
            (f,) = found
            assert f.line == first + next(i for i, t in enumerate(lines) if "# heads merged" in t)
            assert f.evidence["shape_before"] == [8, 4, seq, 8]


class FrameAttention(nn.Module):
    """Spatial attention per frame of a video feature map (B, C, T, H, W): the frames are merged into the batch
    after moving the time axis next to it, or without (the outside development program batch19/bugs/
    video_spatial_attention_reshape.py, from its report's (b, c, t, h, w) -> (b * t, c, h * w) reshape)."""

    def __init__(self, permute: bool):
        super().__init__()
        self.permute = permute
        self.q = nn.Conv3d(4, 4, 1)
        self.out = nn.Linear(4, 3)

    def forward(self, x):
        q = self.q(x)
        b, c, t, h, w = q.shape
        if self.permute:
            q = q.permute(0, 2, 1, 3, 4)
        q = q.reshape(b * t, c, h * w)  # frames merged into the batch
        attn = (q.transpose(1, 2) @ q).softmax(-1)
        return self.out((q @ attn).mean(-1))


def test_frames_merged_into_the_batch_across_the_channels_are_found_at_the_merge():
    for permute in (False, True):
        torch.manual_seed(0)
        model = FrameAttention(permute)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        with watch(model, opt, steps=2) as w:
            for _ in range(3):
                opt.zero_grad()
                out = model(torch.randn(2, 4, 3, 5, 5))  # B=2, C=4, T=3, H=W=5
                F.cross_entropy(out, torch.randint(0, 3, (6,))).backward()
                opt.step()
        assert not w.check_errors, w.check_errors
        found = [f for f in w.findings if f.check == "reshape_reorders_axes"]
        if permute:
            assert found == []
        else:
            lines, first = inspect.getsourcelines(FrameAttention.forward)
            (f,) = found
            assert f.line == first + next(i for i, t in enumerate(lines) if "# frames merged" in t)
            assert f.evidence["shape_before"] == [2, 4, 3, 5, 5]
