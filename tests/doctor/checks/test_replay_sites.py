"""The replays name the cause's line: samples_mixed the first layer (where it was built) or the first op of the
user's forward that mixes the batch's samples; padding_changes_output, with the padding read on the ids alone (no
declared pad token), the first op or layer call whose output at the real positions moves with the padding."""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _line(marker: str, obj) -> int:
    lines, first = inspect.getsourcelines(obj)
    return first + next(i for i, text in enumerate(lines) if marker in text)


def _found(w, check):
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == check]


# samples_mixed ---------------------------------------------------------------------------------------------------


class Attn(nn.Module):
    def __init__(self, batch_first: bool):
        super().__init__()
        self.embed = nn.Linear(8, 16)
        self.attn = nn.MultiheadAttention(16, 2, batch_first=batch_first)  # the attention
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        h = self.embed(x)
        a, _ = self.attn(h, h, h)
        return self.head((h + a).mean(1))


class FunctionalMix(nn.Module):
    def __init__(self, how: str):
        super().__init__()
        self.how = how
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
        self.norm = nn.BatchNorm1d(3)

    def forward(self, x):
        z = self.norm(self.net(x))  # batch norm: the replay runs it on its running statistics
        if self.how == "softmax":
            z = torch.softmax(z, dim=0)  # the softmax
        elif self.how == "center":
            z = z - z.mean(0, keepdim=True)  # the centring
        else:
            z = F.normalize(z, dim=-1)
        return z * 2


class ViewMix(nn.Module):
    """A bidirectional GRU's (directions, batch, hidden) state made per-sample by a view or a reshape (which the
    doctor's own shape check wraps: the op is still the user's) instead of a permute."""

    def __init__(self, how: str):
        super().__init__()
        self.how = how
        self.gru = nn.GRU(8, 6, batch_first=True, bidirectional=True)
        self.head = nn.Linear(12, 3)

    def forward(self, x):
        _, h = self.gru(x)
        if self.how == "view":
            h = h.view(x.shape[0], -1)  # the view
        elif self.how == "reshape":
            h = torch.reshape(h, (x.shape[0], -1))  # the reshape
        else:
            h = h.permute(1, 0, 2).reshape(x.shape[0], -1)
        return self.head(h)


def _mixed(model, shape):
    torch.manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    X, y = torch.randn(3, 8, *shape), torch.randint(0, 3, (3, 8))
    with watch(model, opt, steps=2) as w:
        for xb, yb in zip(X, y, strict=True):
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return _found(w, "samples_mixed")


def test_an_attention_without_batch_first_is_named_where_it_was_built():
    (f,) = _mixed(Attn(batch_first=False), (5, 8))
    assert f.line == _line("# the attention", Attn)
    assert _mixed(Attn(batch_first=True), (5, 8)) == []


def test_a_functional_op_over_the_batch_axis_is_named_at_its_line_in_forward():
    (f,) = _mixed(FunctionalMix("softmax"), (8,))
    assert f.line == _line("# the softmax", FunctionalMix)
    (f,) = _mixed(FunctionalMix("center"), (8,))
    assert f.line == _line("# the centring", FunctionalMix)
    assert _mixed(FunctionalMix("per_sample"), (8,)) == []  # normalised over features, batch norm: no mixing


@pytest.mark.parametrize("how", ["view", "reshape"])
def test_a_view_across_the_batch_is_named_at_its_line_through_the_doctors_own_reshape_wrapper(how):
    (f,) = _mixed(ViewMix(how), (5, 8))
    assert f.line == _line(f"# the {how}", ViewMix)
    assert _mixed(ViewMix("permute"), (5, 8)) == []


def test_a_time_first_rnn_called_directly_on_time_major_data_is_spared():
    # torch.nn.CTCLoss's documented layout: a GRU(batch_first=False) on (time, batch, features); axis 0 is time
    torch.manual_seed(0)
    gru, proj = nn.GRU(6, 16), nn.Linear(16, 5)
    opt = torch.optim.Adam([*gru.parameters(), *proj.parameters()], lr=1e-3)
    with watch(gru, opt, steps=2) as w:
        for _ in range(3):
            h, _ = gru(torch.randn(12, 4, 6))
            log_probs = proj(h).log_softmax(2)
            loss = F.ctc_loss(log_probs, torch.randint(1, 5, (4, 3)), torch.full((4,), 12), torch.full((4,), 3))
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert _found(w, "samples_mixed") == []


# padding_changes_output --------------------------------------------------------------------------------------------

V, D, T, PAD = 30, 16, 10, 0


def _padded_batches(pad: int = PAD, n: int = 3, rows: int = 8):
    g = torch.Generator().manual_seed(0)
    out = []
    for _ in range(n):
        lengths = torch.randint(3, T + 1, (rows,), generator=g)
        lengths[0] = T  # one full row, the others shorter
        ids = torch.randint(1, V - 1, (rows, T), generator=g)
        ids[torch.arange(T)[None, :] >= lengths[:, None]] = pad
        out.append((ids, lengths, torch.randint(0, 2, (rows,), generator=g)))
    return out


class GRUClassifier(nn.Module):
    def __init__(self, read: str, padding_idx: int | None = PAD):
        super().__init__()
        self.read = read
        self.emb = nn.Embedding(V, D, padding_idx=padding_idx)
        self.gru = nn.GRU(D, D, batch_first=True)
        self.head = nn.Linear(D, 2)

    def forward(self, tokens, lengths):
        if self.read == "packed":
            packed = nn.utils.rnn.pack_padded_sequence(
                self.emb(tokens), lengths, batch_first=True, enforce_sorted=False
            )
            _, h = self.gru(packed)
            return self.head(h[-1])
        out, _ = self.gru(self.emb(tokens))
        if self.read == "gather":
            return self.head(out[torch.arange(out.shape[0]), lengths - 1])
        states = out.transpose(0, 1)
        return self.head(states[-1])  # the last step


class Pooled(nn.Module):
    """Embeddings of a pad id with no padding_idx, pooled over the sequence (with or without the mask)."""

    def __init__(self, pad: int, masked: bool):
        super().__init__()
        self.pad, self.masked = pad, masked
        self.emb = nn.Embedding(V, D)
        self.head = nn.Linear(D, 2)

    def forward(self, tokens, lengths):
        h = torch.tanh(self.emb(tokens))
        if self.masked:
            keep = (tokens != self.pad).unsqueeze(-1).float()
            return self.head((h * keep).sum(1) / keep.sum(1))
        return self.head(h.mean(1))  # the mean over all positions


class Encoder(nn.Module):
    def __init__(self, masked: bool):
        super().__init__()
        self.masked = masked
        self.emb = nn.Embedding(V, D, padding_idx=PAD)
        self.layer = nn.TransformerEncoderLayer(D, 2, 32, dropout=0.0, batch_first=True)
        self.head = nn.Linear(D, 2)

    def forward(self, tokens, lengths):
        pads = tokens == PAD if self.masked else None
        h = self.layer(self.emb(tokens), src_key_padding_mask=pads)  # the layer call
        return self.head(h[:, 0])


class BagOfWords(nn.Module):
    """A sum of embeddings whose padding row is zero: the padding adds nothing."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D, padding_idx=PAD)
        self.head = nn.Linear(D, 2)

    def forward(self, tokens, lengths):
        return self.head(self.emb(tokens).sum(1) / lengths[:, None])


class TaggerLM(nn.Module):
    """One output per token from a left-to-right GRU: right padding cannot reach the real positions."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D, padding_idx=PAD)
        self.gru = nn.GRU(D, D, batch_first=True)
        self.head = nn.Linear(D, V)

    def forward(self, tokens, lengths):
        return self.head(self.gru(self.emb(tokens))[0])


def _padding(model, pad: int = PAD, per_token: bool = False):
    torch.manual_seed(0)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for ids, lengths, y in _padded_batches(pad):
            out = model(ids, lengths)
            if per_token:
                loss = F.cross_entropy(out[:, :-1].reshape(-1, V), ids[:, 1:].reshape(-1), ignore_index=pad)
            else:
                loss = F.cross_entropy(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return _found(w, "padding_changes_output")


def test_a_recurrent_models_last_padded_step_is_named_where_it_is_read():
    (f,) = _padding(GRUClassifier("last"))
    assert f.line == _line("# the last step", GRUClassifier)
    assert f.evidence["pad_token_id"] == PAD and f.evidence["rows_with_padding"] >= 2
    (f,) = _padding(GRUClassifier("last", padding_idx=None))  # no padding_idx: the pad id is read on the ids
    assert f.line == _line("# the last step", GRUClassifier)


def test_a_recurrent_model_reading_each_rows_last_real_step_is_spared():
    assert _padding(GRUClassifier("gather")) == []
    assert _padding(GRUClassifier("packed")) == []


def test_pooling_over_the_padding_is_named_at_the_pooling_line():
    (f,) = _padding(Pooled(pad=V - 1, masked=False), pad=V - 1)
    assert f.line == _line("# the mean over all positions", Pooled) and f.evidence["pad_token_id"] == V - 1
    assert _padding(Pooled(pad=V - 1, masked=True), pad=V - 1) == []


def test_attention_without_its_padding_mask_is_named_at_the_layer_call():
    (f,) = _padding(Encoder(masked=False))
    assert f.line == _line("# the layer call", Encoder)
    assert _padding(Encoder(masked=True)) == []


def test_a_zero_padding_embedding_and_a_causal_model_on_right_padding_are_spared():
    assert _padding(BagOfWords()) == []
    assert _padding(TaggerLM(), per_token=True) == []


def test_a_spectral_norm_discriminator_is_replayed_like_for_like_and_left_as_it_was():
    # spectral_norm's power iteration updates its u vector in place at every training forward: two replays that
    # each moved it compared different weights (a clean SN-GAN was called mixing); the replays put it back
    from torch.nn.utils import spectral_norm

    torch.manual_seed(0)
    D = nn.Sequential(spectral_norm(nn.Linear(2, 32)), nn.LeakyReLU(0.1), spectral_norm(nn.Linear(32, 1)))
    opt = torch.optim.Adam(D.parameters(), lr=1e-3)
    seen = []
    with watch(D, opt, steps=2) as w:
        for _ in range(3):
            x = torch.randn(16, 2)
            u_before = D[0].weight_u.clone()
            loss = F.relu(1 - D(x)).mean()
            seen.append(not torch.equal(D[0].weight_u, u_before))  # one power iteration: the program's own
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert not [f for f in _found(w, "samples_mixed") + _found(w, "input_ignored")]
    assert all(seen)
    # the u the program's own forward left is kept: a replay after it restores it rather than advancing it
    u = D[0].weight_u.clone()
    from expkit.doctor.checks.perturb import _Replay

    _Replay(D, {})((torch.randn(4, 2),))
    assert torch.equal(D[0].weight_u, u)


def test_the_replays_leave_a_non_reentrant_checkpoint_around_the_model_working():
    # the replays run inside the checkpoint's forward: any op they record with grad on (the changed input made
    # from an input that requires grad) is a saved tensor the recomputation does not save, and backward raised
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for _ in range(4):
            x = torch.randn(8, 5, requires_grad=True)
            loss = checkpoint(model, x, use_reentrant=False).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors


# a graph network's rows are its nodes: given how they relate, it mixes them on purpose -----------------------------


class MeanAggregation(nn.Module):
    """One GraphSAGE-style layer: each node's features beside the mean of its in-neighbours' (an edge list, or a
    dense adjacency)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin, self.head = nn.Linear(16, 16), nn.Linear(16, 3)

    def forward(self, h, edges):
        if isinstance(edges, tuple):
            src, dst = edges
            agg = torch.zeros_like(h).index_add_(0, dst, h[src])
            deg = torch.zeros(h.shape[0]).index_add_(0, dst, torch.ones(dst.numel())).clamp(min=1)
            agg = agg / deg[:, None]
        else:
            agg = edges @ h / edges.sum(1, keepdim=True).clamp(min=1)
        return self.head(torch.relu(self.lin(torch.cat([h[:, :8], agg[:, :8]], 1))))


@pytest.mark.parametrize("as_edges", [True, False])
def test_a_graph_network_given_its_edges_or_adjacency_is_spared(as_edges):
    torch.manual_seed(0)
    n = 40
    adj = (torch.rand(n, n) < 0.1).float()
    model = MeanAggregation()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    x, y = torch.randn(n, 16), torch.randint(0, 3, (n,))
    edges = tuple(adj.nonzero(as_tuple=True)) if as_edges else adj
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            loss = F.cross_entropy(model(x, edges), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert _found(w, "samples_mixed") == []
    # the same model, given labels (one integer per row) beside the rows, is still replayed: it mixes its rows
    assert _mixed_with_labels() != []


def _mixed_with_labels():
    class Centred(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(8, 3)

        def forward(self, x, y):
            return self.lin(x - x.mean(0))  # over the batch

    torch.manual_seed(0)
    model = Centred()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            x, y = torch.randn(8, 8), torch.randint(0, 3, (8,))
            loss = F.cross_entropy(model(x, y), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return _found(w, "samples_mixed")


class HeldGraph(nn.Module):
    """A graph network that keeps its edge list itself (the outside development program
    batch15/clean/gnn_index_add_and_sparse_mm_semi_supervised.py, from
    https://github.com/rusty1s/pytorch_scatter/issues/185): ``forward(x)`` is given the node features only.
    ``routed=False`` mixes the rows the same way without being told how they relate (a mean over all of them)."""

    def __init__(self, src: torch.Tensor, dst: torch.Tensor, routed: bool) -> None:
        super().__init__()
        self.src, self.dst, self.routed = src, dst, routed
        self.lin, self.head = nn.Linear(16, 16), nn.Linear(16, 3)

    def forward(self, x):
        h = self.lin(x)
        if self.routed:
            agg = torch.zeros_like(h).index_add_(0, self.dst, h[self.src])  # the aggregation
        else:
            agg = h.mean(0, keepdim=True).expand_as(h)  # the pooling
        return self.head(torch.relu(h + agg))


@pytest.mark.parametrize("routed", [True, False])
def test_rows_mixed_by_an_op_given_the_edges_are_spared_and_by_a_mean_are_found(routed):
    torch.manual_seed(0)
    n = 40
    src, dst = (torch.rand(n, n) < 0.1).nonzero(as_tuple=True)
    model = HeldGraph(src, dst, routed)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    x, y = torch.randn(n, 16), torch.randint(0, 3, (n,))
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    found = _found(w, "samples_mixed")
    # the in-place index_add_ on zeros_like(h): the op that mixed is index_add_, whose own input is the edge list
    assert [f.line for f in found] == ([] if routed else [_line("# the pooling", HeldGraph)])


class _RoundSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


class FakeQuant(nn.Module):
    """Weights and activations through a 4-bit fake quantiser with a per-tensor scale over the whole batch (the
    outside development program batch15/clean/qat_ste_custom_function_fake_quant.py, from
    https://discuss.pytorch.org/t/how-does-ste-realize-in-quantification-aware-training/154007). Taken under
    ``no_grad`` the scale mixes the forward's values and no gradient; ``scale_grad=True`` takes it with grad."""

    def __init__(self, scale_grad: bool) -> None:
        super().__init__()
        self.scale_grad = scale_grad
        self.lin, self.head = nn.Linear(8, 16), nn.Linear(16, 3)

    def quant(self, x):
        with torch.set_grad_enabled(self.scale_grad and torch.is_grad_enabled()):
            scale = x.abs().mean().clamp(min=1e-8) / 3  # the scale
        return _RoundSTE.apply(x / scale).clamp(-8, 7) * scale

    def forward(self, x):
        return self.head(torch.relu(self.lin(self.quant(x))))


@pytest.mark.parametrize("scale_grad", [False, True])
def test_a_batch_statistic_taken_without_grad_is_spared_and_with_grad_found(scale_grad):
    found = _mixed(FakeQuant(scale_grad), (8,))
    assert len(found) == (1 if scale_grad else 0)


def test_random_token_ids_with_no_padding_are_not_read_as_padding():
    # a bag of embeddings over random ids (no pad token, no padding_idx): some batch ends rows with one id that
    # occurs nowhere else, by chance; one position per row is no padding, and averaging every token is the model
    class Bag(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb, self.out = nn.EmbeddingBag(100, 16, mode="mean"), nn.Linear(16, 2)

        def forward(self, ids):
            return self.out(self.emb(ids))

    torch.manual_seed(0)
    model = Bag()
    opt = torch.optim.AdamW(model.parameters(), lr=5e-3)
    g = torch.Generator().manual_seed(10)
    with watch(model, opt, steps=8) as w:
        for _ in range(8):
            for _ in range(4):
                ids = torch.randint(0, 100, (8, 12), generator=g)
                y = (ids < 30).float().mean(1).gt(0.3).long()
                (F.cross_entropy(model(ids), y) / 4).backward()
            opt.step()
            opt.zero_grad()
    assert _found(w, "padding_changes_output") == []
    # the pooling over padding is still found where the padding fills runs (a test above); here, on the same model
    assert _padding(PooledBag()) != []


class PooledBag(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb, self.out = nn.EmbeddingBag(V, D, mode="mean"), nn.Linear(D, 3)

    def forward(self, ids, lengths):
        return self.out(self.emb(ids))  # every position, the padding's too


def test_a_replay_of_a_ddp_wrapped_model_calls_the_inner_module(tmp_path):
    # outside clean program batch17/clean/moco_ddp_gloo_shuffle_bn_queue.py (https://github.com/facebookresearch/moco
    # /issues/37): a replay through DDP's forward broadcast the batch-norm buffers in place between the program's
    # forward and backward, and its backward failed ("modified by an inplace operation")
    import torch
    from torch import nn

    from expkit.doctor.checks.perturb import _Replay, replay_target

    dist = torch.distributed
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1)
    try:
        net = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
        ddp = nn.parallel.DistributedDataParallel(net)
        loss = ddp(torch.randn(6, 4)).square().sum()
        versions = [b._version for b in net.buffers()]
        out, _ = _Replay(ddp, {})((torch.randn(6, 4),))
        assert replay_target(ddp) is net and replay_target(net) is net
        assert out is not None and out.shape == (6, 2)
        assert [b._version for b in net.buffers()] == versions
        loss.backward()
    finally:
        dist.destroy_process_group()
