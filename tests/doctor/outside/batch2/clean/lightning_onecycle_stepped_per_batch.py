"""A Lightning module returning OneCycleLR with ``"interval": "step"`` inside the ``lr_scheduler`` dict, as the
docs say: the schedule advances at every optimizer step.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/6948
"""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(256, 10), torch.randint(0, 4, (256,)))
loader = torch.utils.data.DataLoader(data, batch_size=32, shuffle=True)


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 4))

    def training_step(self, batch, _):
        x, y = batch
        return F.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=0.1, momentum=0.9)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, epochs=3, steps_per_epoch=len(loader))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


trainer = L.Trainer(
    max_epochs=3, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
    enable_model_summary=False,
)  # fmt: skip
trainer.fit(Model(), loader)
