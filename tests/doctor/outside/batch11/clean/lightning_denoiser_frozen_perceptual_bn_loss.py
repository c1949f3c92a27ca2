"""Trains a small image denoising autoencoder with PyTorch Lightning using a frozen "perceptual" feature network
(conv + BatchNorm with fixed, pretrained-style running statistics) inside the loss. The feature network is frozen on
purpose: requires_grad_(False), excluded from the optimizer, and kept in eval() so that its BatchNorm layers use and
keep their stored statistics; gradients still flow through it to the autoencoder output. Recent Lightning versions
preserve the train/eval mode that submodules had before fit (they only warn that some modules are in eval mode), so
the loss network stays fixed for the whole run.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/18930
"""

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


def make_feature_net():
    net = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.Conv2d(8, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
    )
    with torch.no_grad():  # pretend these are pretrained statistics
        for m in net.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
    return net


class PerceptualDenoiser(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.ae = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 1, 3, padding=1))
        self.feat = make_feature_net()
        self.feat.requires_grad_(False)
        self.feat.eval()
        self.ref_mean = self.feat[1].running_mean.clone()

    def training_step(self, batch, idx):
        noisy, clean = batch
        out = self.ae(noisy)
        loss = F.mse_loss(out, clean) + F.mse_loss(self.feat(out), self.feat(clean))
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.ae.parameters(), lr=1e-3)


clean = torch.rand(64, 1, 16, 16)
noisy = clean + 0.3 * torch.randn_like(clean)
dl = DataLoader(TensorDataset(noisy, clean), batch_size=16, shuffle=True)
model = PerceptualDenoiser()
trainer = pl.Trainer(
    max_steps=8,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    accelerator="cpu",
    enable_model_summary=False,
)
trainer.fit(model, dl)
print(
    "feature net training flag:",
    model.feat.training,
    "BN running_mean drift:",
    float((model.feat[1].running_mean - model.ref_mean).abs().max()),
)
