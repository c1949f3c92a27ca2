"""Trains a small GAN on a 2-D ring of eight Gaussians with PyTorch Lightning in manual optimization mode. Each
training_step takes two discriminator steps (on two halves of the real batch, with generated samples detached
so the generator gets no gradient from them) and then one generator step with the non-saturating loss; every
update runs inside `toggled_optimizer`, so the other network's parameters have requires_grad switched off while
the loss is back-propagated, and uses `manual_backward`. The discriminator's gradients are norm-clipped with
`self.clip_gradients` (Trainer-level gradient_clip_val is not allowed in manual mode), and both step-wise
learning-rate schedulers are stepped by hand once per training_step. Two optimizers stepped an unequal number of
times, detached fakes for one update and not the other, and schedulers stepped by hand are all intended.

Source: https://github.com/Lightning-AI/pytorch-lightning/blob/master/examples/pytorch/domain_templates/generative_adversarial_net.py
"""

import math
import tempfile

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)

Z = 8


def ring_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    k = torch.randint(0, 8, (n,), generator=g).float()
    centers = torch.stack([torch.cos(k * 2 * math.pi / 8), torch.sin(k * 2 * math.pi / 8)], 1) * 2.0
    return centers + 0.05 * torch.randn(n, 2, generator=g)


class RingGAN(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.gen = nn.Sequential(nn.Linear(Z, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2))
        self.disc = nn.Sequential(
            nn.Linear(2, 64), nn.LeakyReLU(0.2), nn.Linear(64, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1)
        )

    def training_step(self, batch, batch_idx):
        (real,) = batch
        opt_g, opt_d = self.optimizers()
        sched_g, sched_d = self.lr_schedulers()

        for chunk in real.chunk(2):
            with self.toggled_optimizer(opt_d):
                fake = self.gen(torch.randn(len(chunk), Z, device=self.device)).detach()
                real_logit, fake_logit = self.disc(chunk), self.disc(fake)
                d_loss = F.binary_cross_entropy_with_logits(
                    real_logit, torch.ones_like(real_logit)
                ) + F.binary_cross_entropy_with_logits(fake_logit, torch.zeros_like(fake_logit))
                opt_d.zero_grad()
                self.manual_backward(d_loss)
                self.clip_gradients(opt_d, gradient_clip_val=1.0, gradient_clip_algorithm="norm")
                opt_d.step()

        with self.toggled_optimizer(opt_g):
            fake_logit = self.disc(self.gen(torch.randn(len(real), Z, device=self.device)))
            g_loss = F.binary_cross_entropy_with_logits(fake_logit, torch.ones_like(fake_logit))
            opt_g.zero_grad()
            self.manual_backward(g_loss)
            opt_g.step()

        sched_g.step()
        sched_d.step()
        self.last = (d_loss.item(), g_loss.item())

    def configure_optimizers(self):
        opt_g = torch.optim.Adam(self.gen.parameters(), lr=2e-3, betas=(0.5, 0.999))
        opt_d = torch.optim.Adam(self.disc.parameters(), lr=2e-3, betas=(0.5, 0.999))
        sched_g = torch.optim.lr_scheduler.StepLR(opt_g, step_size=5, gamma=0.5)
        sched_d = torch.optim.lr_scheduler.StepLR(opt_d, step_size=5, gamma=0.5)
        return [opt_g, opt_d], [sched_g, sched_d]


class PrintLosses(L.Callback):
    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        if batch_idx % 5 == 0:
            print("batch", batch_idx, "global_step", trainer.global_step, "d_loss %.4f g_loss %.4f" % module.last)


def main():
    L.seed_everything(0, verbose=False)
    loader = DataLoader(TensorDataset(ring_data(2048, seed=1)), batch_size=128, shuffle=True)
    model = RingGAN()
    with tempfile.TemporaryDirectory() as root:
        trainer = L.Trainer(
            accelerator="cpu",
            devices=1,
            max_steps=60,
            logger=False,
            enable_checkpointing=False,
            enable_progress_bar=False,
            enable_model_summary=False,
            default_root_dir=root,
            callbacks=[PrintLosses()],
        )
        trainer.fit(model, loader)
    with torch.no_grad():
        samples = model.gen(torch.randn(512, Z))
    print("mean radius of generated samples", round(samples.norm(dim=1).mean().item(), 3), "(target 2.0)")


if __name__ == "__main__":
    main()
