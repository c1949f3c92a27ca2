"""Self-distillation (DINO-style) on synthetic image feature vectors with PyTorch Lightning: a student MLP with a
projection head whose "last_layer" should be frozen (lr = 0) during the first epoch, an EMA teacher, and a centred
cross-entropy between sharpened teacher and student outputs. The freeze is implemented in on_before_optimizer_step by
setting lr=0 for every param group that carries a "last_layer" key, but configure_optimizers puts all parameters in a
single default group without that key, so the loop matches nothing and the last layer is updated from the first step
(the known instability DINO avoids this way). No error or warning.

Source: https://github.com/lightly-ai/lightly/pull/2065
"""

import copy

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)


class DinoLike(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(32, 64), nn.GELU())
        self.head = nn.Sequential(nn.Linear(64, 32), nn.GELU())
        self.last_layer = nn.Linear(32, 64, bias=False)
        self.teacher = copy.deepcopy(nn.ModuleList([self.backbone, self.head, self.last_layer])).requires_grad_(False)
        self.register_buffer("center", torch.zeros(64))
        self.w0 = self.last_layer.weight.detach().clone()

    def student(self, x):
        return self.last_layer(F.normalize(self.head(self.backbone(x)), dim=-1))

    def teach(self, x):
        b, h, l = self.teacher
        return l(F.normalize(h(b(x)), dim=-1))

    def training_step(self, batch, idx):
        (x,) = batch
        v1, v2 = x + 0.1 * torch.randn_like(x), x + 0.1 * torch.randn_like(x)
        with torch.no_grad():
            t = self.teach(v1)
            tp = F.softmax((t - self.center) / 0.04, -1)
            self.center.mul_(0.9).add_(0.1 * t.mean(0))
        loss = -(tp * F.log_softmax(self.student(v2) / 0.1, -1)).sum(-1).mean()
        return loss

    def on_before_optimizer_step(self, optimizer):
        if self.current_epoch < 1:
            for group in optimizer.param_groups:
                if "last_layer" in group:
                    group["lr"] = 0.0

    def on_train_batch_end(self, outputs, batch, idx):
        with torch.no_grad():
            for ps, pt in zip(
                [*self.backbone.parameters(), *self.head.parameters(), *self.last_layer.parameters()],
                self.teacher.parameters(),
            ):
                pt.mul_(0.99).add_(0.01 * ps)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)  # BUG-LINE


dl = DataLoader(TensorDataset(torch.randn(256, 32)), batch_size=32, shuffle=True)
model = DinoLike()
trainer = pl.Trainer(
    max_steps=8,
    max_epochs=1,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    accelerator="cpu",
    enable_model_summary=False,
)
trainer.fit(model, dl)
print("last layer moved during epoch 0:", float((model.last_layer.weight.detach() - model.w0).abs().max()))
