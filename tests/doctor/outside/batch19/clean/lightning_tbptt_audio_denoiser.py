"""Streaming audio denoiser (GRU over waveform frames) trained with truncated BPTT in
PyTorch Lightning 2.x (correct, unusual: several optimizer steps per batch, carried hidden
state detached between chunks).

Lightning 2.0 removed built-in truncated_bptt_steps; the recommended replacement is manual
optimization: split each long sequence into chunks, run the GRU on a chunk starting from the
previous chunk's hidden state, backprop and step per chunk, then .detach() the hidden state so
the next chunk's graph does not reach into already-freed earlier chunks. The hidden state is
reset for every new batch.

Source: https://github.com/Lightning-AI/pytorch-lightning/issues/17848
"""

import math
import warnings

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

warnings.filterwarnings("ignore")
torch.manual_seed(0)
torch.set_num_threads(2)

FRAME, SEQ_FRAMES, CHUNK = 8, 40, 10


class StreamingDenoiser(pl.LightningModule):
    def __init__(self, hidden=24):
        super().__init__()
        self.automatic_optimization = False
        self.truncated_bptt_steps = CHUNK
        self.rnn = nn.GRU(FRAME, hidden, batch_first=True)
        self.out = nn.Linear(hidden, FRAME)

    def forward(self, x, h=None):
        y, h = self.rnn(x, h)
        return x - self.out(y), h  # predict the noise and subtract it

    def training_step(self, batch, batch_idx):
        noisy, clean = batch
        opt = self.optimizers()
        hiddens = None
        losses = []
        for start in range(0, noisy.shape[1], self.truncated_bptt_steps):
            x = noisy[:, start : start + self.truncated_bptt_steps]
            y = clean[:, start : start + self.truncated_bptt_steps]
            pred, hiddens = self(x, hiddens)
            loss = F.mse_loss(pred, y)
            opt.zero_grad()
            self.manual_backward(loss)
            opt.step()
            hiddens = hiddens.detach()
            losses.append(loss.detach())
        if batch_idx % 4 == 0:
            print(
                f"epoch {self.current_epoch} batch {batch_idx} chunk-mean loss {torch.stack(losses).mean().item():.5f}"
            )

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=5e-3)


def make_audio(n=96):
    g = torch.Generator().manual_seed(0)
    t = torch.arange(SEQ_FRAMES * FRAME).float() / 400.0
    freqs = 20 + 60 * torch.rand(n, 1, generator=g)
    clean = 0.5 * torch.sin(2 * math.pi * freqs * t + 6.28 * torch.rand(n, 1, generator=g))
    noisy = clean + 0.2 * torch.randn(clean.shape, generator=g)
    return TensorDataset(noisy.view(n, SEQ_FRAMES, FRAME), clean.view(n, SEQ_FRAMES, FRAME))


def main():
    trainer = pl.Trainer(
        max_epochs=2,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
    )
    trainer.fit(StreamingDenoiser(), DataLoader(make_audio(), batch_size=8, shuffle=True))


if __name__ == "__main__":
    main()
