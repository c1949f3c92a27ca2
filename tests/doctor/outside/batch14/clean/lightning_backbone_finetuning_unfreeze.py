"""LightningModule fine-tuned with the BackboneFinetuning callback (frozen, then unfrozen backbone).

Unusual but correct: the module exposes its feature extractor as `self.backbone` (the attribute
the callback looks for) and a separate head. The callback freezes the backbone before training,
so configure_optimizers only gives the optimizer the parameters that require grad; at epoch 2 the
callback unfreezes the backbone and adds it to the optimizer as a new parameter group with a
reduced learning rate that it then ramps up.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/19711
"""

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from lightning.pytorch.callbacks import BackboneFinetuning
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)

X = torch.randn(512, 20)
Y = (torch.sin(X[:, :5]).sum(1) > 0).long()
loader = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True)


class FineTuned(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Linear(64, 2)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.head(self.backbone(x)), y)
        if batch_idx == 0:
            groups = [round(g["lr"], 5) for g in self.trainer.optimizers[0].param_groups]
            frozen = not next(self.backbone.parameters()).requires_grad
            print(f"epoch {self.current_epoch} loss {loss.item():.4f} backbone frozen {frozen} group lrs {groups}")
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam([p for p in self.parameters() if p.requires_grad], lr=3e-3)


callback = BackboneFinetuning(
    unfreeze_backbone_at_epoch=2, lambda_func=lambda epoch: 1.5, backbone_initial_ratio_lr=0.1, verbose=False
)
trainer = pl.Trainer(
    accelerator="cpu",
    max_epochs=5,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    callbacks=[callback],
)
trainer.fit(FineTuned(), loader)
