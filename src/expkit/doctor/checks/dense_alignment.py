"""A dense target that does not line up with its image (issue 32): a random flip applied to the image and not to
its segmentation mask (or the other way round), so part of every batch trains on a mask of the mirrored scene.

Measured on the batch the loss saw, not read from the augmentation code: for each sample, how well the mask's
classes separate the image's pixel values (the correlation ratio eta^2: the share of the intensity variance that
lies between the mask's classes), with the mask as given and mirrored left-right and top-bottom. A correct
pipeline's masks line up with their images as given; when, in several samples, the mirrored mask separates the
image far better than the mask as given, those samples' image and mask were flipped apart. The finding names the
last user line that flipped a tensor shaped like one image (a Dataset's ``__getitem__``), when one did."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from expkit.doctor.checks import Check, register
from expkit.doctor.findings import user_frame

if TYPE_CHECKING:
    from expkit.doctor.probe import ForwardEvent, LossEvent, Probe

MIN_SIDE = 8  # smaller maps are not images
MAX_CLASSES = 16  # a mask holds few values
ALIGNED = 0.2  # eta^2 a mirrored mask must reach for a sample to count (noise alone stays near 0)
RATIO = 2.0  # ... and how many times the mask as given it must reach
MIN_SAMPLES = 2  # samples that line up only mirrored
MIN_SHARE = 0.15  # ... as a share of the batch


def _eta_squared(image: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per sample: the share of the image's (N, H, W) pixel variance between the classes of ``mask`` (N, H, W)."""
    n = image.shape[0]
    x = image.reshape(n, -1).double()
    labels = mask.reshape(n, -1).long()
    labels = labels - labels.min()
    k = int(labels.max()) + 1
    counts = torch.zeros(n, k, dtype=torch.float64).scatter_add_(1, labels, torch.ones_like(x))
    sums = torch.zeros(n, k, dtype=torch.float64).scatter_add_(1, labels, x)
    means = sums / counts.clamp(min=1)
    grand = x.mean(1, keepdim=True)
    between = (counts * (means - grand) ** 2).sum(1)
    total = ((x - grand) ** 2).sum(1)
    return between / total.clamp(min=1e-12)


@register
class DenseTargetMisaligned(Check):
    """Segmentation masks that separate their images' pixels only when mirrored, in part of a batch."""

    name = "dense_target_misaligned"

    def __init__(self) -> None:
        self.image: torch.Tensor | None = None
        self.done = False
        self.flips: dict[tuple[int, ...], tuple[str | None, int | None]] = {}  # shape -> the last user flip of it

    def start(self, probe: Probe) -> None:
        for owner, attr in ((torch, "flip"), (torch.Tensor, "flip"), (torch, "fliplr"), (torch, "flipud")):
            probe.patch(owner, attr, self._wrap(probe))

    def _wrap(self, probe: Probe) -> Any:
        check = self

        def make(original: Any) -> Any:
            def flip(tensor: Any, *args: Any, **kwargs: Any) -> Any:
                out = original(tensor, *args, **kwargs)
                if probe.active and not check.done and isinstance(tensor, torch.Tensor) and tensor.dim() >= 2:
                    where = user_frame(2)
                    if where[0] is not None and len(check.flips) < 64:
                        check.flips[tuple(tensor.shape)] = where
                return out

            return flip

        return make

    def on_forward(self, probe: Probe, ev: ForwardEvent) -> None:
        x = ev.first_tensor()
        if not self.done and ev.training and isinstance(x, torch.Tensor) and x.is_floating_point() and x.dim() == 4:
            self.image = x.detach()

    def on_loss(self, probe: Probe, ev: LossEvent) -> None:
        image, y = self.image, ev.target
        if self.done or image is None or not isinstance(y, torch.Tensor) or probe.inside_forward:
            return
        n, _, h, w = image.shape
        if min(h, w) < MIN_SIDE or n < 4:
            return
        mask = y.detach()
        if mask.dim() == 4 and mask.shape[1] == 1:
            mask = mask[:, 0]
        if tuple(mask.shape) != (n, h, w) or mask.dtype == torch.bool:
            return
        values = mask.unique()
        if values.numel() < 2 or values.numel() > MAX_CLASSES or not bool((values == values.round()).all()):
            return
        self.done = True
        gray = image.mean(1)
        given = _eta_squared(gray, mask)
        mirrored = torch.maximum(_eta_squared(gray, mask.flip(-1)), _eta_squared(gray, mask.flip(-2)))
        apart = (mirrored >= ALIGNED) & (mirrored >= RATIO * given)
        count = int(apart.sum())
        if count < MIN_SAMPLES or count < MIN_SHARE * n:
            return
        probe.report(
            kind="bug",
            check=self.name,
            message=f"in {count} of {n} samples the target mask lines up with the image only when mirrored (its "
            f"classes explain {float(mirrored[apart].median()):.0%} of the pixel variance mirrored, "
            f"{float(given[apart].median()):.0%} as given): the augmentation flipped the image and not the mask "
            "(or the reverse)",
            evidence={
                "samples_aligned_only_mirrored": count,
                "batch": n,
                "eta2_mirrored_median": float(mirrored[apart].median()),
                "eta2_given_median": float(given[apart].median()),
            },
            fix="draw the random flip once and apply it to the image and the mask together (torchvision.transforms.v2 "
            "with tv_tensors.Mask, or one `if flip:` that flips both)",
            where=self.flips.get(tuple(image.shape[1:])) or self.flips.get(tuple(image.shape)),
        )
