"""Transfer learning in PyTorch Lightning with the BackboneFinetuning callback.

A "pretrained" conv backbone (conv + BatchNorm) is to stay completely frozen for the first
epochs while a new head is trained, and only then be unfrozen with a lower learning rate. The
callback is configured with train_bn=False so BatchNorm layers should stay frozen too. However
BackboneFinetuning.freeze_before_training() calls self.freeze(pl_module.backbone) without
forwarding train_bn, so freeze() uses its default train_bn=True: every BatchNorm layer of the
"frozen" backbone keeps requires_grad=True (its affine parameters go into the optimizer and get
updated by the head's learning rate). Nothing is reported; the pretrained backbone silently
drifts during the phase in which it is supposed to be frozen.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/14277
"""

import warnings

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from lightning.pytorch.callbacks import BackboneFinetuning
from torch.utils.data import DataLoader, TensorDataset

warnings.filterwarnings("ignore")
torch.manual_seed(0)
torch.set_num_threads(2)


def make_backbone():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
    )


def pretrain(backbone, steps=30):
    """Stand-in for loading ImageNet weights: a short pretraining on a different task."""
    head = nn.Linear(32, 5)
    opt = torch.optim.Adam(list(backbone.parameters()) + list(head.parameters()), lr=3e-3)
    for _ in range(steps):
        x = torch.randn(32, 3, 16, 16)
        y = (x[:, 0].mean((1, 2)) > 0).long() + 2 * (x[:, 1].mean((1, 2)) > 0).long()
        loss = F.cross_entropy(head(backbone(x)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    backbone.eval()
    return backbone


class TransferModel(pl.LightningModule):
    def __init__(self, backbone, num_classes=3, lr=1e-2):
        super().__init__()
        self.backbone = backbone
        self.head = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, num_classes))
        self.lr = lr

    def forward(self, x):
        return self.head(self.backbone(x))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        if batch_idx == 0:
            print(f"epoch {self.current_epoch} loss {loss.item():.4f}")
        return loss

    def configure_optimizers(self):
        params = filter(lambda p: p.requires_grad, self.parameters())
        return torch.optim.Adam(params, lr=self.lr)


def make_target_data(n=256):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(n, 3, 16, 16, generator=g) * 1.5 + 0.5
    y = torch.bucketize(x[:, 2].mean((1, 2)), torch.tensor([0.4, 0.6]))
    return TensorDataset(x, y)


def main():
    backbone = pretrain(make_backbone())
    bn_before = backbone[1].weight.detach().clone()
    model = TransferModel(backbone)
    finetune_cb = BackboneFinetuning(unfreeze_backbone_at_epoch=3, lambda_func=lambda e: 1.5, train_bn=False)  # BUG-LINE  # fmt: skip
    trainer = pl.Trainer(
        max_epochs=3,
        callbacks=[finetune_cb],
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
    )
    trainer.fit(model, DataLoader(make_target_data(), batch_size=32, shuffle=True))
    print(f"backbone[1].weight max diff vs pretrained: {(backbone[1].weight - bn_before).abs().max().item():.4f}")


if __name__ == "__main__":
    main()
