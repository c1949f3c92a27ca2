"""Trains an LSTM classifier on synthetic speech-like feature sequences (batch, time, features)
with PyTorch Lightning. The nn.LSTM is created without batch_first=True, so it interprets the
batch dimension as time and the time dimension as the batch: recurrence runs across different
utterances of the minibatch, and `output[:, -1]` picks the state of the last *frame index* for
each utterance position, mixing information across examples. Shapes happen to be compatible, so
nothing errors or warns; the classifier just learns poorly.

Source: https://github.com/yunjey/pytorch-tutorial/issues/196
"""

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
F, T, C = 8, 20, 3


class UtteranceLSTM(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(F, 32)  # BUG-LINE
        self.head = nn.Linear(32, C)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = nn.functional.cross_entropy(logits, y)
        self.log("train_loss", loss)
        self.log("train_acc", (logits.argmax(-1) == y).float().mean())
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=5e-3)


g = torch.Generator().manual_seed(1)
y = torch.randint(0, C, (1536,), generator=g)
freqs = torch.tensor([0.2, 0.5, 0.9])
t = torch.arange(T).float()
x = torch.randn(1536, T, F, generator=g) * 0.3
x[:, :, 0] += torch.sin(freqs[y][:, None] * t)
loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(0))
model = UtteranceLSTM()
trainer = L.Trainer(
    max_steps=45,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    accelerator="cpu",
)
trainer.fit(model, loader)
m = trainer.callback_metrics
print(f"final loss {m['train_loss'].item():.4f} acc {m['train_acc'].item():.3f}")
