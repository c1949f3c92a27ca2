"""A self-training LightningModule keeps an EMA teacher as a submodule and trains the student on the teacher's
soft pseudo-labels, but the pseudo-labels are not detached and ``configure_optimizers`` returns
``self.parameters()``. The consistency loss therefore backpropagates into the teacher and the optimizer updates
it, on top of the EMA update.

Source: https://github.com/lhoyer/DAFormer/issues/59
"""

import copy
import warnings

import lightning.pytorch as pl
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

warnings.filterwarnings("ignore")
torch.manual_seed(0)


class SelfTraining(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.student = nn.Sequential(nn.Linear(12, 48), nn.ReLU(), nn.Linear(48, 4))
        self.teacher = copy.deepcopy(self.student)

    def training_step(self, batch, batch_idx):
        x, y, x_unlab = batch
        sup = F.cross_entropy(self.student(x), y)
        pseudo = F.softmax(self.teacher(x_unlab), dim=-1)  # BUG-LINE
        cons = -(pseudo * F.log_softmax(self.student(x_unlab + 0.1 * torch.randn_like(x_unlab)), -1)).sum(-1).mean()
        return sup + cons

    def on_train_batch_end(self, outputs, batch, batch_idx):
        with torch.no_grad():
            for t, s in zip(self.teacher.parameters(), self.student.parameters(), strict=False):
                t.mul_(0.99).add_(s, alpha=0.01)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


ds = TensorDataset(torch.randn(128, 12), torch.randint(0, 4, (128,)), torch.randn(128, 12))
trainer = pl.Trainer(
    max_steps=8,
    accelerator="cpu",
    enable_checkpointing=False,
    logger=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(SelfTraining(), DataLoader(ds, batch_size=16))
