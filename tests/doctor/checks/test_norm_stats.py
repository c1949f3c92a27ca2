"""frozen_norm_updates_stats: a BatchNorm whose parameters are frozen runs in train mode and its running statistics
move during the watched steps (written several ways), and the correct twins (backbone in eval, trainable BN,
momentum 0, no running stats, BN kept trainable while the rest is frozen) that must stay silent."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of as _line_of  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402

CHECK = "frozen_norm_updates_stats"


def _found(w):
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == CHECK]


def _run(how: str):
    torch.manual_seed(0)
    bn_kwargs = {"momentum": 0.0} if how == "momentum0" else {}
    if how == "no_stats":
        bn_kwargs = {"track_running_stats": False}
    backbone = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16, **bn_kwargs), nn.ReLU())
    if how == "no_affine":
        backbone = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16, affine=False), nn.ReLU())
    head = nn.Linear(16, 3)
    model = nn.Sequential(backbone, head)
    if how == "fastai":  # freeze all but the BatchNorm layers: BN is trained
        for m in backbone.modules():
            if not isinstance(m, nn.BatchNorm1d):
                for p in m.parameters(recurse=False):
                    p.requires_grad_(False)
    elif how != "trainable":
        backbone.requires_grad_(False)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=0.05)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            model.train()  # train: loop
            if how == "eval_backbone":
                backbone.eval()
            x, y = torch.randn(8, 8) * 2 + 1, torch.randint(0, 3, (8,))
            if how == "no_grad_features":
                with torch.no_grad():
                    feats = backbone(x)  # forward: features
                out = head(feats)
            else:
                out = model(x)
            loss = F.cross_entropy(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return _found(w)


@pytest.mark.parametrize("how", ["frozen", "no_affine", "no_grad_features"])
def test_frozen_norm_in_train_mode_is_found_at_the_train_call(how):
    (f,) = _run(how)
    assert f.line == _line_of("# train: loop", _run)
    assert f.evidence["max_stat_change"] > 0


@pytest.mark.parametrize("how", ["eval_backbone", "trainable", "momentum0", "no_stats", "fastai"])
def test_eval_trainable_or_static_norms_are_clean(how):
    assert _run(how) == []


def test_never_put_in_train_mode_names_the_forward():
    """A freshly built model is in train mode without any train() call: the forward is named."""
    torch.manual_seed(0)
    backbone = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten())
    for p in backbone.parameters():
        p.requires_grad = False
    head = nn.Linear(4, 2)
    opt = torch.optim.SGD(head.parameters(), lr=0.1)
    with watch(head, opt, steps=2) as w:
        for _ in range(3):
            feats = backbone(torch.randn(4, 3, 8, 8))  # forward: fresh
            loss = F.cross_entropy(head(feats), torch.tensor([0, 1, 0, 1]))
            opt.zero_grad()
            loss.backward()
            opt.step()
    (f,) = _found(w)
    assert f.line == _line_of("# forward: fresh", test_never_put_in_train_mode_names_the_forward)


def test_gan_discriminator_frozen_for_the_generator_step_is_clean():
    """pix2pix style: D's requires_grad is switched off for G's step (and D runs in train mode there), but D's
    BatchNorm is trained in D's own step: not a frozen layer."""
    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(4, 8))
    D = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
    opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
    opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
    with watch(G, opt_g, steps=2) as w:
        for _ in range(3):
            real, fake = torch.randn(8, 8), G(torch.randn(8, 4))
            D.requires_grad_(True)
            d_loss = F.binary_cross_entropy_with_logits(D(real), torch.ones(8, 1)) + F.binary_cross_entropy_with_logits(
                D(fake.detach()), torch.zeros(8, 1)
            )
            opt_d.zero_grad()
            d_loss.backward()
            opt_d.step()
            D.requires_grad_(False)
            g_loss = F.binary_cross_entropy_with_logits(D(fake), torch.ones(8, 1))
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()
    assert _found(w) == []


def test_a_mean_teacher_kept_in_train_mode_and_updated_by_ema_is_not_a_frozen_extractor():
    # the teacher's BatchNorm is frozen (no grad) and runs in train mode on purpose: its weights follow the student
    # by EMA, so they move during the watch; a frozen extractor's do not
    import copy

    torch.manual_seed(0)
    student = nn.Sequential(nn.Linear(2, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 3))
    teacher = copy.deepcopy(student).requires_grad_(False)
    opt = torch.optim.Adam(student.parameters(), lr=1e-2)
    with watch(student, opt, steps=2) as w:
        for _ in range(3):
            x = torch.randn(32, 2)
            with torch.no_grad():
                soft = teacher(x).softmax(1)
            loss = nn.functional.cross_entropy(student(x), soft)
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                for t, s in zip(teacher.parameters(), student.parameters(), strict=True):
                    t.mul_(0.9).add_(s, alpha=0.1)
    assert w.done and not w.check_errors, w.check_errors
    assert not [f for f in w.findings if f.check == "frozen_norm_updates_stats"]
