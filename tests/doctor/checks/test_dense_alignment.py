"""dense_target_misaligned: a random flip applied to the image and not to its segmentation mask (batch 12's and
batch 10's outside programs; the torchvision guide on transforming masks with their images:
https://pytorch.org/vision/stable/auto_examples/transforms/plot_transforms_getting_started.html), beside a flip of
both, no flip and masks unrelated to their images."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from source_lines import line_of as _line_of  # noqa: E402
from torch import nn  # noqa: E402

from expkit.doctor import watch  # noqa: E402

S = 16


class Blobs(torch.utils.data.Dataset):
    def __init__(self, how: str):
        g = torch.Generator().manual_seed(0)
        self.how, self.items = how, []
        yy, xx = torch.meshgrid(torch.arange(S).float(), torch.arange(S).float(), indexing="ij")
        for _ in range(32):
            cx = float(torch.randint(2, 6, (1,), generator=g))  # left of centre: a mirror moves it
            cy = float(torch.randint(3, 13, (1,), generator=g))
            mask = ((xx - cx) ** 2 + (yy - cy) ** 2 <= 6).float()
            img = 0.3 * torch.randn(1, S, S, generator=g) + mask
            if how == "unrelated":
                mask = (torch.rand(S, S, generator=g) < 0.3).float()
            self.items.append((img, mask[None]))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        img, mask = self.items[i]
        if self.how in ("image_only", "both") and i % 2 == 0:
            img = img.flip(-1)  # the image's flip
            if self.how == "both":
                mask = mask.flip(-1)
        return img, mask


def _train(how: str):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 1, 1))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    loader = torch.utils.data.DataLoader(Blobs(how), batch_size=16, shuffle=True)
    with watch(steps=2) as w:
        for img, mask in loader:
            loss = F.binary_cross_entropy_with_logits(net(img), mask)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert w.done and not w.check_errors, w.check_errors
    return [f for f in w.findings if f.check == "dense_target_misaligned"]


def test_an_image_flipped_without_its_mask_is_found_at_the_flip():
    (f,) = _train("image_only")
    assert f.line == _line_of("# the image's flip", Blobs.__getitem__)
    assert f.evidence["samples_aligned_only_mirrored"] >= 4


@pytest.mark.parametrize("how", ["both", "none", "unrelated"])
def test_flips_of_both_no_flip_and_unrelated_masks_are_silent(how):
    assert _train(how) == []
