"""2x super-resolution GAN (PixelShuffle generator + patch discriminator) in PyTorch Lightning
with manual optimization (correct, unusual: two optimizers, detached fakes, toggled optimizers).

Lightning 2.x requires manual optimization for multiple optimizers. Each training_step first
updates the discriminator on real HR patches and on generator outputs that are .detach()-ed
(so the D step does not push gradients into G), inside toggle_optimizer/untoggle_optimizer so
only D's parameters require grad; then it updates the generator with an L1 content loss plus a
small adversarial term, with G's optimizer toggled. manual_backward is used for both.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/17294
"""

import warnings

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

warnings.filterwarnings("ignore")
torch.manual_seed(0)
torch.set_num_threads(2)


class Generator(nn.Module):
    def __init__(self, ch=16, scale=2):
        super().__init__()
        self.head = nn.Conv2d(1, ch, 3, padding=1)
        self.body = nn.Sequential(nn.ReLU(), nn.Conv2d(ch, ch, 3, padding=1), nn.ReLU())
        self.up = nn.Sequential(nn.Conv2d(ch, scale * scale, 3, padding=1), nn.PixelShuffle(scale))

    def forward(self, lr):
        base = F.interpolate(lr, scale_factor=2, mode="bilinear", align_corners=False)
        return base + self.up(self.body(self.head(lr)))


class Discriminator(nn.Module):
    def __init__(self, ch=16):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, ch, 3, 2, 1),
            nn.LeakyReLU(0.2),
            nn.Conv2d(ch, ch, 3, 2, 1),
            nn.LeakyReLU(0.2),
            nn.Conv2d(ch, 1, 3, 1, 1),
        )

    def forward(self, x):
        return self.net(x)


class SRGAN(pl.LightningModule):
    def __init__(self, adv_weight=1e-2):
        super().__init__()
        self.automatic_optimization = False
        self.generator, self.discriminator = Generator(), Discriminator()
        self.adv_weight = adv_weight

    def training_step(self, batch, batch_idx):
        lr, hr = batch
        opt_g, opt_d = self.optimizers()
        sr = self.generator(lr)

        self.toggle_optimizer(opt_d)
        d_real, d_fake = self.discriminator(hr), self.discriminator(sr.detach())
        loss_d = (
            F.binary_cross_entropy_with_logits(d_real, torch.ones_like(d_real))
            + F.binary_cross_entropy_with_logits(d_fake, torch.zeros_like(d_fake))
        ) / 2
        opt_d.zero_grad()
        self.manual_backward(loss_d)
        opt_d.step()
        self.untoggle_optimizer(opt_d)

        self.toggle_optimizer(opt_g)
        d_out = self.discriminator(sr)
        content = F.l1_loss(sr, hr)
        adv = F.binary_cross_entropy_with_logits(d_out, torch.ones_like(d_out))
        loss_g = content + self.adv_weight * adv
        opt_g.zero_grad()
        self.manual_backward(loss_g)
        opt_g.step()
        self.untoggle_optimizer(opt_g)

        if batch_idx % 8 == 0:
            bicubic = F.l1_loss(F.interpolate(lr, scale_factor=2, mode="bilinear", align_corners=False), hr)
            print(
                f"epoch {self.current_epoch} batch {batch_idx:2d} D {loss_d.item():.4f} "
                f"G-content {content.item():.4f} (bilinear {bicubic.item():.4f})"
            )

    def configure_optimizers(self):
        opt_g = torch.optim.Adam(self.generator.parameters(), lr=2e-3, betas=(0.5, 0.999))
        opt_d = torch.optim.Adam(self.discriminator.parameters(), lr=1e-3, betas=(0.5, 0.999))
        return opt_g, opt_d


def make_pairs(n=128, size=16):
    g = torch.Generator().manual_seed(0)
    yy, xx = torch.meshgrid(torch.linspace(0, 1, size), torch.linspace(0, 1, size), indexing="ij")
    hr = []
    for _ in range(n):
        f = torch.randint(2, 6, (2,), generator=g).float()
        ph = torch.rand(2, generator=g) * 6.28
        hr.append(torch.sin(f[0] * 6.28 * xx + ph[0]) * torch.cos(f[1] * 6.28 * yy + ph[1]))
    hr = torch.stack(hr)[:, None]
    lr = F.avg_pool2d(hr, 2)
    return TensorDataset(lr, hr)


def main():
    trainer = pl.Trainer(
        max_epochs=2,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
    )
    trainer.fit(SRGAN(), DataLoader(make_pairs(), batch_size=16, shuffle=True))


if __name__ == "__main__":
    main()
