"""A LightningModule encodes its inputs under ``torch.no_grad()`` inside ``training_step`` (to save memory) while
``configure_optimizers`` hands the encoder to the optimizer to be fine-tuned: the encoder never gets a
gradient, so only the classifier learns. Nothing warns.

Source: https://github.com/edreisMD/ConVIRT-pytorch/issues/7
"""

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randint(0, 50, (192, 10)), torch.randint(0, 2, (192,)))
loader = torch.utils.data.DataLoader(data, batch_size=32, shuffle=True)


class TextClassifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Embedding(50, 32), nn.Flatten(), nn.Linear(320, 64), nn.ReLU())
        self.classifier = nn.Linear(64, 2)

    def training_step(self, batch, _):
        ids, y = batch
        with torch.no_grad():  # BUG-LINE
            h = self.encoder(ids)
        return F.cross_entropy(self.classifier(h), y)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


trainer = L.Trainer(
    max_epochs=1, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
    enable_model_summary=False,
)  # fmt: skip
trainer.fit(TextClassifier(), loader)
