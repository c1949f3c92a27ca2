"""Semi-supervised multi-label sound tagging with a Mean Teacher in Lightning.

Unusual on purpose: the LightningModule holds two copies of the network. The teacher is a deepcopy
whose parameters have requires_grad_(False); it is never given to the optimizer and is updated
only by an exponential moving average of the student in on_train_batch_end, written in place
under torch.no_grad(). Teacher predictions on unlabeled clips are computed under no_grad and used
as fixed targets for a consistency loss whose weight ramps up from near zero (so early steps train
almost only on the supervised loss). The model outputs sigmoid probabilities and the supervised loss is
nn.BCELoss on those probabilities (multi-label, several tags can be active). Only a quarter of the
clips have labels. Modelled on the SemiMTR EMA discussion, where the maintainer explains that the
teacher is an EMA of the student and its gradients are stopped.

Source: https://github.com/amazon-science/semimtr-text-recognition/issues/13
"""

import copy
import math

import lightning.pytorch as pl
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)

N_MELS, FRAMES, N_TAGS = 32, 40, 5


def make_clips(n):
    tags = (torch.rand(n, N_TAGS) < 0.3).float()
    x = 0.7 * torch.randn(n, N_MELS, FRAMES)
    for k in range(N_TAGS):
        lo = 2 + 6 * k
        pattern = torch.sin(torch.arange(FRAMES) * (0.3 + 0.25 * k)).abs()
        x[:, lo : lo + 4, :] += tags[:, k].view(-1, 1, 1) * 1.2 * pattern
    return x, tags


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv1d(N_MELS, 64, 5, padding=2),
            nn.BatchNorm1d(64),
            nn.ReLU(),
            nn.Dropout(0.2),
            nn.Conv1d(64, 64, 5, padding=2),
            nn.ReLU(),
        )
        self.fc = nn.Linear(64, N_TAGS)

    def forward(self, x, noise=0.0):
        if noise > 0:
            x = x + noise * torch.randn_like(x)
        return torch.sigmoid(self.fc(self.conv(x).amax(-1)))


class MeanTeacher(pl.LightningModule):
    def __init__(self, ema=0.99, max_w=5.0, ramp=60):
        super().__init__()
        self.student = Tagger()
        self.teacher = copy.deepcopy(self.student)
        for p in self.teacher.parameters():
            p.requires_grad_(False)
        self.ema, self.max_w, self.ramp = ema, max_w, ramp
        self.bce = nn.BCELoss()

    def training_step(self, batch, batch_idx):
        x, y, has_label = batch
        p_student = self.student(x, noise=0.2)
        with torch.no_grad():
            p_teacher = self.teacher(x, noise=0.2)
        m = has_label.bool()
        sup = self.bce(p_student[m], y[m]) if m.any() else p_student.sum() * 0.0
        w = self.max_w * math.exp(-5 * (1 - min(self.global_step, self.ramp) / self.ramp) ** 2)
        cons = ((p_student - p_teacher) ** 2).mean()
        loss = sup + w * cons
        if self.global_step % 25 == 0:
            print(f"step {self.global_step:3d} sup {sup.item():.4f} cons {cons.item():.4f} w {w:.3f}")
        return loss

    def on_train_batch_end(self, outputs, batch, batch_idx):
        with torch.no_grad():
            for pt, ps in zip(self.teacher.parameters(), self.student.parameters()):
                pt.mul_(self.ema).add_(ps.detach(), alpha=1 - self.ema)
            for bt, bs in zip(self.teacher.buffers(), self.student.buffers()):
                bt.copy_(bs)

    def configure_optimizers(self):
        return torch.optim.Adam(self.student.parameters(), lr=2e-3)


def main():
    x, y = make_clips(1024)
    has_label = torch.zeros(1024)
    has_label[:256] = 1.0
    loader = DataLoader(TensorDataset(x, y, has_label), batch_size=64, shuffle=True)
    model = MeanTeacher()
    trainer = pl.Trainer(
        max_epochs=5,
        accelerator="cpu",
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, loader)
    xt, yt = make_clips(512)
    model.eval()
    with torch.no_grad():
        for name, net in (("student", model.student), ("teacher", model.teacher)):
            acc = ((net(xt) > 0.5).float() == yt).float().mean().item()
            print(f"{name} per-tag accuracy {acc:.3f}")


if __name__ == "__main__":
    main()
