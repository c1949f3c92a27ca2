"""A Lightning classifier whose forward ends in softmax, trained with cross_entropy in training_step.

doctor-expect: softmax_before_cross_entropy
"""

import lightning as L
import torch
from torch import nn

torch.manual_seed(0)
X, y = torch.randn(512, 16), torch.randint(0, 4, (512,))
train = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=32, shuffle=True)


class Classifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))

    def forward(self, x):
        return torch.softmax(self.net(x), dim=-1)  # bug: cross_entropy applies log_softmax itself

    def training_step(self, batch, _):
        x, y = batch
        return nn.functional.cross_entropy(self(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


trainer = L.Trainer(
    max_steps=6, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
    enable_model_summary=False,
)  # fmt: skip
trainer.fit(Classifier(), train)
