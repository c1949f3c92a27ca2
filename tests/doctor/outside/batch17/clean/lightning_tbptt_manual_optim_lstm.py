"""Truncated BPTT for a long-sequence LSTM regressor in Lightning with manual optimisation.

Unusual on purpose: automatic_optimization is off and training_step runs its own inner loop over
time chunks of each long sequence: forward the chunk with the carried (h, c), manual_backward on
the chunk loss, optimizer step, then detach (h, c) before the next chunk so the graph is cut at
the chunk boundary while the forward state keeps flowing. Several optimizer steps happen inside
one training_step, and training_step returns nothing. The hidden state is re-initialised to zeros
at each new batch (sequences are independent). Modelled on the Lightning TBPTT documentation,
which shows this manual loop with hiddens.detach() after each split.

Source: https://lightning.ai/docs/pytorch/stable/_sources/common/tbptt.rst.txt
"""

import math

import lightning.pytorch as pl
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)

T, CHUNK, HID = 240, 40, 32


def make_data(n=96):
    t = torch.arange(T, dtype=torch.float32)
    period = torch.empty(n, 1).uniform_(15, 45)
    x = torch.sin(2 * math.pi * t / period) + 0.1 * torch.randn(n, T)
    y = torch.zeros(n, T)
    y[:, 1:] = 0.7 * x[:, :-1] + 0.3 * torch.roll(x, 5, dims=1)[:, :-1]
    return TensorDataset(x.unsqueeze(-1), y.unsqueeze(-1))


class TBPTTRegressor(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.lstm = nn.LSTM(1, HID, batch_first=True)
        self.head = nn.Linear(HID, 1)

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        x, y = batch
        h = torch.zeros(1, x.shape[0], HID)
        c = torch.zeros(1, x.shape[0], HID)
        losses = []
        for start in range(0, T, CHUNK):
            xs, ys = x[:, start : start + CHUNK], y[:, start : start + CHUNK]
            out, (h, c) = self.lstm(xs, (h, c))
            loss = nn.functional.mse_loss(self.head(out), ys)
            opt.zero_grad()
            self.manual_backward(loss)
            self.clip_gradients(opt, gradient_clip_val=1.0, gradient_clip_algorithm="norm")
            opt.step()
            h, c = h.detach(), c.detach()
            losses.append(loss.item())
        if batch_idx == 0:
            print(
                f"epoch {self.current_epoch} chunk losses first {losses[0]:.4f} last {losses[-1]:.4f} "
                f"mean {sum(losses) / len(losses):.4f}"
            )

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=5e-3)


def main():
    loader = DataLoader(make_data(), batch_size=32, shuffle=True)
    trainer = pl.Trainer(
        max_epochs=5,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(TBPTTRegressor(), loader)


if __name__ == "__main__":
    main()
