"""label_leak: an input column that is an affine copy of the target."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _train(*, leak: bool, regression: bool = False):
    torch.manual_seed(0)
    X = torch.randn(256, 5)
    y = X[:, 0] * 2 + X[:, 1] if regression else (X[:, 0] > 0).long()
    if leak:
        X = torch.cat([X, (y.float()[:, None] - 0.5) * 3], dim=1)  # the target, shifted and scaled
    model = nn.Linear(X.shape[1], 1 if regression else 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with watch(model, opt, steps=2) as w:
        for i in range(2):
            xb, yb = X[64 * i : 64 * i + 64], y[64 * i : 64 * i + 64]
            out = model(xb)
            loss = nn.functional.mse_loss(out[:, 0], yb) if regression else nn.functional.cross_entropy(out, yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert not w.check_errors
    return [f for f in w.findings if f.check == "label_leak"]


def test_label_column_in_the_features_is_found():
    (f,) = _train(leak=True)
    assert f.evidence["leaking_column"] == 5 and f.evidence["correlation"] == pytest.approx(1.0)
    assert f.evidence["ln_classes"] == pytest.approx(0.6931, abs=1e-4)  # ln 2
    (g,) = _train(leak=True, regression=True)
    assert g.evidence["leaking_column"] == 5


def test_features_that_only_predict_the_target_are_clean():
    # column 0 decides the class exactly (y = x0 > 0) but is not the class itself: r is about 0.8, not 1
    assert _train(leak=False) == []
    assert _train(leak=False, regression=True) == []  # y = 2 x0 + x1: r(x0, y) = 0.89


def test_a_near_copy_that_is_not_the_target_is_clean():
    # forecasting: the last value of a random walk vs the next one, r ~ 1 - 1e-4 over these rows; a good
    # predictor, not a leak
    torch.manual_seed(0)
    walk = torch.randn(64, 2001).cumsum(dim=1)  # 64 walks: their spread (~45) dwarfs one step (1)
    X, y = walk[:, -2:-1].clone(), walk[:, -1].clone()
    r = torch.corrcoef(torch.stack([X[:, 0], y]))[0, 1]
    assert 0.99 < float(r) < 1 - 1e-6
    model = nn.Linear(1, 1)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    with watch(model, opt, steps=1) as w:
        loss = nn.functional.mse_loss(model(X)[:, 0], y)
        loss.backward()
        opt.step()
    assert [f.check for f in w.findings if f.check == "label_leak"] == []


def test_a_one_hot_encoded_label_is_found_and_a_one_hot_feature_is_not():
    torch.manual_seed(0)
    n = 256
    X = torch.randn(n, 4)
    y = (X[:, 0] > 0.5).long() + (X[:, 1] > 0).long()  # three classes
    region = torch.randint(0, 3, (n,))
    for leak in (False, True):
        cats = [region, y] if leak else [region]
        Z = torch.cat([X] + [nn.functional.one_hot(c, 3).float() for c in cats], dim=1)
        model = nn.Linear(Z.shape[1], 3)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        with watch(model, opt, steps=1) as w:
            loss = nn.functional.cross_entropy(model(Z[:64]), y[:64])
            loss.backward()
            opt.step()
        found = [f for f in w.findings if f.check == "label_leak"]
        if not leak:
            assert found == []
            continue
        (f,) = found
        assert f.evidence["leaking_column"] in (7, 8, 9) and "one-hot indicator of class" in f.evidence["leaks"]
        assert f.evidence["correlation"] == pytest.approx(1.0)


# sequences: a window that holds its own target, a decoder fed the target it is scored on -----------------------

SERIES = torch.sin(torch.arange(4000) * 0.05) + 0.1 * torch.randn(4000, generator=torch.Generator().manual_seed(1))


def _windows(target_inside: bool):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv1d(1, 8, 5, padding=2), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 32, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            i = torch.randint(0, 3900, (16,)).tolist()
            x = torch.stack([SERIES[j : j + 32] for j in i]).unsqueeze(1)  # (rows, 1, time)
            y = torch.stack([SERIES[j + 31] if target_inside else SERIES[j + 32] for j in i])
            loss = nn.functional.mse_loss(model(x).squeeze(-1), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "label_leak"]


def test_a_window_that_holds_its_own_target_leaks_and_the_next_value_does_not():
    (f,) = _windows(target_inside=True)
    assert f.evidence["leaking_column"] == 31
    assert _windows(target_inside=False) == []


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.GRU(1, 16, batch_first=True)
        self.dec = nn.GRU(1, 16, batch_first=True)
        self.out = nn.Linear(16, 1)

    def forward(self, hist, dec_in):
        _, h = self.enc(hist.unsqueeze(-1))
        o, _ = self.dec(dec_in.unsqueeze(-1), h)
        return self.out(o).squeeze(-1)


def _decoder(how: str):
    torch.manual_seed(0)
    model = Seq2Seq()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            i = torch.randint(0, 3900, (16,)).tolist()
            win = torch.stack([SERIES[j : j + 32] for j in i])
            hist, target = win[:, :24], win[:, 24:]
            dec_in = torch.cat([hist[:, -1:], target[:, :-1]], dim=1)  # teacher forcing: the previous values
            if how == "target":
                dec_in = target  # the decoder input
            if how == "autoencoder":
                loss = nn.functional.mse_loss(model(target, dec_in), target)  # the first input: an autoencoder
            else:
                loss = nn.functional.mse_loss(model(hist, dec_in), target)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "label_leak"]


def test_a_decoder_fed_its_own_target_is_found_where_its_input_was_assigned():
    (f,) = _decoder("target")
    lines, first = __import__("inspect").getsourcelines(_decoder)
    assert f.line == first + next(i for i, t in enumerate(lines) if "# the decoder input" in t)
    assert f.evidence["input"] == 1


@pytest.mark.parametrize("how", ["teacher_forcing", "autoencoder"])
def test_teacher_forcing_and_a_target_given_as_the_first_input_are_silent(how):
    assert _decoder(how) == []


def _seq2seq(given: bool):
    transformers = pytest.importorskip("transformers")
    cfg = transformers.BartConfig(
        vocab_size=40,
        d_model=16,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        max_position_embeddings=32,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        decoder_start_token_id=2,
    )
    torch.manual_seed(0)
    model = transformers.BartForConditionalGeneration(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            src, labels = torch.randint(3, 40, (4, 8)), torch.randint(3, 40, (4, 6))
            dec = labels if given else None  # the decoder input
            out = model(input_ids=src, labels=labels, decoder_input_ids=dec)
            opt.zero_grad()
            out.loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "label_leak"]


def test_an_encoder_decoder_given_its_labels_as_decoder_inputs_is_found_where_they_were_assigned():
    (f,) = _seq2seq(given=True)
    lines, first = __import__("inspect").getsourcelines(_seq2seq)
    assert f.line == first + next(i for i, t in enumerate(lines) if "# the decoder input" in t)
    assert _seq2seq(given=False) == []  # the model shifts the labels itself
