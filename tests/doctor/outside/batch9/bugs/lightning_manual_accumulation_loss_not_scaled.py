"""Manual optimization with gradient accumulation calls manual_backward on the unscaled loss.

The training_step steps the optimizer every N batches but backpropagates each full mean loss,
so the accumulated gradient is N times the mean-batch gradient; every optimizer step is
effectively taken with an N-times larger learning rate.
Source: https://github.com/Lightning-AI/pytorch-lightning/issues/17957
"""

import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset

N = 3


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.net = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 3))

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self.net(x), y)
        self.manual_backward(loss)  # BUG-LINE
        if (batch_idx + 1) % N == 0:
            opt.step()
            opt.zero_grad()
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


torch.manual_seed(0)
ds = TensorDataset(torch.randn(160, 8), torch.randint(0, 3, (160,)))
trainer = L.Trainer(max_steps=6, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False)
trainer.fit(Model(), DataLoader(ds, batch_size=8))
print("done", trainer.global_step)
