"""loss_term_without_gradient and dense_targets_one_class: what the backpropagated loss is made of (a term that
adds to its value but carries no gradient; class targets that hold one class at every position), each with the
correct twins that must stay silent (a loss accumulated from a zero tensor, weighted and averaged losses, masks
that hold several classes, a detached term that is zero)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of as _line_of  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402


def _checks(w, name):
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == name]


def _segmenter(how: str):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 3, 1))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    with watch(net, opt, steps=2) as w:
        for _ in range(3):
            x = torch.randn(4, 3, 12, 12)
            mask = (x.mean(1) > 0).long() + (x[:, 0] > 1).long()  # classes 0, 1, 2
            if how == "truncated_mask":
                mask = (mask.float() / 255.0).long()  # the truncated mask
            logits = net(x)
            ce = F.cross_entropy(logits, mask)
            if how == "argmax_penalty":
                hard = logits.argmax(1).float()  # the hard mask
                loss = ce + 0.5 * (hard[:, :, 1:] - hard[:, :, :-1]).abs().mean()
            elif how == "item_penalty":
                share = (logits.argmax(1) == 0).float().mean().item()  # the item
                loss = ce + torch.tensor([share]).sum()
            elif how == "accumulated":
                loss = torch.zeros(())
                for term in (ce, 0.1 * logits.pow(2).mean()):
                    loss = loss + term
            elif how == "weighted":
                loss = (0.7 * ce + 0.3 * F.cross_entropy(logits, mask.flip(0))) / 2
            elif how == "zero_detached":
                loss = ce + 0.0 * logits.detach().mean()
            else:
                loss = ce
            opt.zero_grad()
            loss.backward()
            opt.step()
    return w


def test_a_penalty_built_from_argmax_is_found_at_the_loss_line():
    # pattern of wonbeomjang/mobile-hair-segmentation-pytorch#3: an edge loss on the argmax mask
    (f,) = _checks(_segmenter("argmax_penalty"), "loss_term_without_gradient")
    assert f.line == _line_of("ce = F.cross_entropy(logits, mask)", _segmenter)
    assert f.evidence["term_without_gradient"] > 0.01 * f.evidence["loss"]


def test_a_penalty_through_item_is_found_at_the_item_call():
    (f,) = _checks(_segmenter("item_penalty"), "loss_term_without_gradient")
    assert f.line == _line_of("# the item", _segmenter)


@pytest.mark.parametrize("how", ["plain", "accumulated", "weighted", "zero_detached"])
def test_losses_whose_every_term_trains_are_silent(how):
    assert _checks(_segmenter(how), "loss_term_without_gradient") == []


def test_a_mask_truncated_to_one_class_is_found_where_it_was_truncated():
    # pattern of pytorch/vision#2497: a class-index mask divided by 255 like an image, then .long(); made in the
    # training loop, the mask is named where it was made (loss_mask's made-at record)
    (f,) = _checks(_segmenter("truncated_mask"), "dense_targets_one_class")
    assert f.evidence["target_class"] == 0
    assert f.line == _line_of("# the truncated mask", _segmenter)


class _Masks(torch.utils.data.Dataset):
    """Images and class masks made per sample in __getitem__; the default collate stacks them (and frees them)."""

    def __init__(self, truncate: bool):
        g = torch.Generator().manual_seed(0)
        self.masks, self.truncate = torch.randint(0, 3, (16, 12, 12), generator=g), truncate

    def __len__(self):
        return len(self.masks)

    def __getitem__(self, i):
        image = self.masks[i][None].float().repeat(3, 1, 1)
        if self.truncate:
            return image, (self.masks[i].float() / 255.0).long()  # the mask made like an image
        return image, self.masks[i].clone()


def test_a_mask_truncated_in_a_datasets_getitem_is_named_there():
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 3, 1))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    with watch(net, opt, steps=2) as w:
        for x, mask in torch.utils.data.DataLoader(_Masks(truncate=True), batch_size=4):
            loss = F.cross_entropy(net(x), mask)
            opt.zero_grad()
            loss.backward()
            opt.step()
    (f,) = _checks(w, "dense_targets_one_class")
    assert f.line == _line_of("# the mask made like an image", _Masks)


def test_masks_with_several_classes_are_silent():
    assert _checks(_segmenter("plain"), "dense_targets_one_class") == []


def test_infonce_labels_all_zero_are_not_dense_targets():
    # MoCo's InfoNCE puts the positive at column 0 of every row: one class by design, but not per position
    torch.manual_seed(0)
    enc = nn.Linear(16, 8)
    opt = torch.optim.SGD(enc.parameters(), lr=0.1)
    with watch(enc, opt, steps=2) as w:
        for _ in range(3):
            q, k = F.normalize(enc(torch.randn(300, 16)), dim=1), F.normalize(torch.randn(300, 8), dim=1)
            logits = torch.cat([(q * k).sum(1, keepdim=True), q @ torch.randn(8, 64)], dim=1)
            loss = F.cross_entropy(logits, torch.zeros(300, dtype=torch.long))
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert _checks(w, "dense_targets_one_class") == []


def _resized(mode: str, classes: int):
    torch.manual_seed(0)
    masks = torch.zeros(4, 1, 6, 6)  # upsampled: bicubic overshoots 0 at the 0|4 border
    masks[..., 3:] = 1.0
    if classes > 2:
        masks[..., 4:, :] = classes - 1.0
    net = nn.Conv2d(3, max(classes, 2), 3, padding=1)
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    with watch(net, opt, steps=2) as w:
        small = F.interpolate(masks, size=(10, 10), mode=mode)  # the resize
        # thresholded; or rounded and clamped into the ids (bicubic overshoots them at the ends of the range)
        target = (small > 0.5).long() if classes == 2 else small.round().clamp(0, classes - 1).long()
        for _ in range(3):
            loss = F.cross_entropy(net(torch.randn(4, 3, 10, 10)), target.squeeze(1))
            opt.zero_grad()
            loss.backward()
            opt.step()
    return _checks(w, "label_map_interpolated")


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_a_class_map_resized_smoothly_is_found_at_the_resize(mode):
    # pattern of ykamikawa/tf-keras-PSPNet#2 (batch 7, dev): class ids averaged at the borders
    (f,) = _resized(mode, classes=5)
    assert f.line == _line_of("# the resize", _resized)


@pytest.mark.parametrize(("mode", "classes"), [("nearest", 5), ("bicubic", 2)])
def test_nearest_resizes_and_thresholded_binary_masks_are_silent(mode, classes):
    assert _resized(mode, classes) == []


class _VAE(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc, self.dec = nn.Linear(6, 8), nn.Linear(4, 6)

    def forward(self, x):
        mean, log_var = self.enc(x).chunk(2, dim=-1)
        return self.dec(mean + torch.randn_like(mean) * (0.5 * log_var).exp()), mean, log_var


def _vae(how: str):
    torch.manual_seed(0)
    model = _VAE()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    with watch(model, opt, steps=2) as w:
        for _ in range(3):
            x, mask = torch.randn(8, 10, 6), (torch.rand(8, 10) > 0.2).float()
            recon, mean, log_var = model(x)
            per_event = 1 + log_var - mean.pow(2) - log_var.exp()  # (batch, events, latent)
            rec = ((recon - x) ** 2).sum(-1)
            if how == "kl_total_masked":  # GNTPP#4: the KL of the whole batch given to every event
                kl = -0.5 * torch.sum(per_event) * mask  # the total spread
                loss = ((rec * mask + kl).sum()) / mask.sum()
            elif how == "kl_total_added":  # the same total added to each sample's reconstruction, then averaged
                kl_total = per_event.sum()  # the batch total
                loss = (rec.mean(1) - 0.5 * kl_total).mean()
            elif how == "per_event":  # the fix: reduce over the latent axis only
                kl = -0.5 * torch.sum(per_event, dim=-1) * mask
                loss = ((rec + kl) * mask).sum() / mask.sum()
            elif how == "scalar_terms":  # a batch-summed KL beside a mean reconstruction, as two scalars
                loss = rec.mean() - 0.5 * per_event.sum() / x.shape[0]
            elif how == "normalised":  # weights normalised by their batch total (a division)
                w_ = rec.detach().softmax(0) * (1 + mean.pow(2).sum(-1))
                loss = (rec * w_ / w_.sum()).sum()
            elif how == "weight_penalty":  # a parameter's sum added per sample (first axis 8 like the batch)
                loss = (rec.mean(1) + 1e-3 * model.enc.weight.pow(2).sum()).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return w


@pytest.mark.parametrize(
    ("how", "marker"), [("kl_total_masked", "# the total spread"), ("kl_total_added", "# the batch total")]
)
def test_a_batch_total_spread_over_the_samples_is_found_at_the_sum(how, marker):
    (f,) = _checks(_vae(how), "batch_sum_spread_over_samples")
    assert f.line == _line_of(marker, _vae) and f.evidence["batch"] == 8


@pytest.mark.parametrize("how", ["per_event", "scalar_terms", "normalised", "weight_penalty"])
def test_per_sample_reductions_normalising_totals_and_weight_sums_are_silent(how):
    assert _checks(_vae(how), "batch_sum_spread_over_samples") == []


def _two_models(how: str):
    """A generator and a discriminator (or a student and a teacher) whose losses mix terms of both."""
    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16))
    D = nn.Sequential(nn.Linear(16, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
    opt_g, opt_d = torch.optim.Adam(G.parameters(), lr=2e-4), torch.optim.Adam(D.parameters(), lr=2e-4)
    bce = nn.BCEWithLogitsLoss()
    with watch(G, opt_g, steps=2) as w:
        for _ in range(3):
            real = torch.randn(32, 16) + 2.0
            fake = G(real)
            if how in ("detached_adversarial", "gan"):
                opt_d.zero_grad()
                (bce(D(real), torch.ones(32, 1)) + bce(D(fake.detach()), torch.zeros(32, 1))).backward()
                opt_d.step()
            opt_g.zero_grad()
            rec = F.l1_loss(fake, real)
            if how == "detached_adversarial":  # SRGAN-style: the generator's adversarial term on a detached fake
                loss = 1e-3 * bce(D(fake.detach()), torch.ones(32, 1)) + rec  # the idle adversarial term
            elif how == "reversed_distillation":  # the student's logits detached, the trainable teacher's not
                loss = rec + F.mse_loss(D(real), D(fake).detach())  # the idle teacher term
            elif how == "distillation":  # the teacher's side detached
                loss = rec + F.mse_loss(D(fake), D(real).detach())
            elif how == "both_stepped":  # one loss, two optimizers stepping after it
                opt_d.zero_grad()
                loss = rec + bce(D(real), torch.ones(32, 1))
            else:  # a GAN's generator loss through D
                loss = 1e-3 * bce(D(fake), torch.ones(32, 1)) + rec
            loss.backward()
            opt_g.step()
            if how == "both_stepped":
                opt_d.step()
    assert not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "loss_term_trains_nothing_stepped"]


@pytest.mark.parametrize(
    ("how", "marker"),
    [("detached_adversarial", "# the idle adversarial term"), ("reversed_distillation", "# the idle teacher term")],
)
def test_a_loss_term_that_reaches_only_parameters_nobody_steps_is_found_at_its_call(how, marker):
    (f,) = _two_models(how)
    assert f.line == _line_of(marker, _two_models) and f.evidence["terms"] == 2


@pytest.mark.parametrize("how", ["gan", "distillation", "both_stepped"])
def test_terms_that_reach_a_stepped_parameter_are_silent(how):
    assert _two_models(how) == []
