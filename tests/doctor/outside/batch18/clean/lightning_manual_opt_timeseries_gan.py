"""Lightning GAN for synthetic sensor windows using manual optimization with two optimizers.

Unusual but correct: automatic_optimization is switched off; each training_step
first updates the discriminator on real windows and *detached* generator output,
then updates the generator through the (frozen via toggle_optimizer) discriminator
with the non-saturating loss.  Each optimizer is zeroed, back-propagated with
self.manual_backward and stepped explicitly, and because Lightning does not step
schedulers in manual mode the two StepLR schedulers are stepped by hand at the
end of every epoch.

Source: https://github.com/Lightning-AI/pytorch-lightning/pull/6294
"""

import math
import warnings

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

warnings.filterwarnings("ignore")
torch.manual_seed(0)
torch.set_num_threads(2)

WIN, Z_DIM = 32, 8


def real_windows(n):
    t = torch.linspace(0, 1, WIN)
    freq = torch.empty(n, 1).uniform_(1.5, 3.0)
    phase = torch.rand(n, 1) * 2 * math.pi
    return torch.sin(2 * math.pi * freq * t + phase) + 0.05 * torch.randn(n, WIN)


class WindowGAN(pl.LightningModule):
    def __init__(self, lr=2e-3):
        super().__init__()
        self.automatic_optimization = False
        self.lr = lr
        self.G = nn.Sequential(
            nn.Linear(Z_DIM, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, WIN), nn.Tanh()
        )
        self.D = nn.Sequential(nn.Linear(WIN, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1))

    def training_step(self, batch, batch_idx):
        (real,) = batch
        opt_g, opt_d = self.optimizers()
        z = torch.randn(real.shape[0], Z_DIM)

        self.toggle_optimizer(opt_d)
        fake = self.G(z).detach()
        d_loss = F.softplus(-self.D(real)).mean() + F.softplus(self.D(fake)).mean()
        opt_d.zero_grad()
        self.manual_backward(d_loss)
        opt_d.step()
        self.untoggle_optimizer(opt_d)

        self.toggle_optimizer(opt_g)
        g_loss = F.softplus(-self.D(self.G(z))).mean()
        opt_g.zero_grad()
        self.manual_backward(g_loss)
        opt_g.step()
        self.untoggle_optimizer(opt_g)

        if batch_idx % 8 == 0:
            print(
                f"epoch {self.current_epoch} batch {batch_idx:2d} d_loss {d_loss.item():.4f} g_loss {g_loss.item():.4f}"
            )

    def on_train_epoch_end(self):
        for sched in self.lr_schedulers():
            sched.step()

    def configure_optimizers(self):
        opt_g = torch.optim.Adam(self.G.parameters(), lr=self.lr, betas=(0.5, 0.999))
        opt_d = torch.optim.Adam(self.D.parameters(), lr=self.lr, betas=(0.5, 0.999))
        s_g = torch.optim.lr_scheduler.StepLR(opt_g, step_size=2, gamma=0.5)
        s_d = torch.optim.lr_scheduler.StepLR(opt_d, step_size=2, gamma=0.5)
        return [opt_g, opt_d], [s_g, s_d]


def spectrum_peak(x):
    return torch.fft.rfft(x, dim=-1).abs().mean(0).argmax().item()


def main():
    data = real_windows(1024)
    loader = DataLoader(TensorDataset(data), batch_size=64, shuffle=True)
    gan = WindowGAN()
    trainer = pl.Trainer(
        max_epochs=5,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(gan, loader)
    with torch.no_grad():
        fake = gan.G(torch.randn(512, Z_DIM))
    print(
        f"dominant FFT bin real {spectrum_peak(data)} fake {spectrum_peak(fake)}; "
        f"std real {data.std().item():.3f} fake {fake.std().item():.3f}; "
        f"final lr {gan.optimizers()[0].param_groups[0]['lr']:.2e}"
    )


if __name__ == "__main__":
    main()
