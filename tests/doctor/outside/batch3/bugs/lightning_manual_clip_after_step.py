"""A LightningModule under manual optimization clips its gradients with ``self.clip_gradients`` after
``opt.step()``: the clip acts on gradients that were already applied (and are zeroed before the next
backward), so no update is ever clipped and the recurrent model's exploding steps go through. Nothing warns.

Source: https://github.com/VGraphRNN/VGRNN/issues/4
"""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(128, 20, 4), torch.randn(128, 1) * 10)
loader = torch.utils.data.DataLoader(data, batch_size=16, shuffle=True)


class Forecaster(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.rnn = nn.RNN(4, 32, batch_first=True)
        self.head = nn.Linear(32, 1)

    def training_step(self, batch, _):
        x, y = batch
        opt = self.optimizers()
        out, _h = self.rnn(x)  # (B, T, 32)
        loss = F.mse_loss(self.head(out[:, -1]), y)
        opt.zero_grad()
        self.manual_backward(loss)
        opt.step()
        self.clip_gradients(opt, gradient_clip_val=1.0, gradient_clip_algorithm="norm")  # BUG-LINE

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


trainer = L.Trainer(
    max_epochs=1, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
    enable_model_summary=False,
)  # fmt: skip
trainer.fit(Forecaster(), loader)
