"""training_step normalises over dim=0 (the batch) before nll_loss.

Source: https://runebook.dev/en/docs/pytorch/generated/torch.tensor.softmax
"""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
X, y = torch.randn(256, 16), torch.randint(0, 4, (256,))
train = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=32, shuffle=True)


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

    def training_step(self, batch, _):
        x, y = batch
        logp = torch.log_softmax(self.net(x), dim=0)  # BUG-LINE
        return F.nll_loss(logp, y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


trainer = L.Trainer(
    max_steps=3, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
    enable_model_summary=False,
)  # fmt: skip
trainer.fit(Classifier(), train)
