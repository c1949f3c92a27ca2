"""Per-timestep LSTM tagger on a time-major (seq, batch, feature) time-series pipeline.

The data pipeline (like the CNN feature extractor of a CRNN) produces time-major tensors of
shape (T, B, F), and the per-step labels are (T, B): is the running sum of the signal so far
positive? Bug: the LSTM was switched to `batch_first=True` (e.g. for export) while its input
is still time-major. The output keeps the shape (T, B, H), so the head and the loss run
unchanged, but the recurrence now runs across the batch axis: each "sequence" is one time step
of all B series, and no series ever sees its own past. The loss barely moves. Fix: keep
`batch_first=False` for time-major input (or transpose the input to (B, T, F)).

Source: https://discuss.pytorch.org/t/lstm-change-batch-first-true-loss-does-not-decrease/62364
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

T, B, H = 20, 32, 32


def make_batch():
    x = torch.randn(T, B, 1)  # time-major
    y = (x.cumsum(dim=0) > 0).float().squeeze(-1)  # (T, B)
    return x, y


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(1, H, batch_first=True)  # BUG-LINE
        self.head = nn.Linear(H, 1)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out).squeeze(-1)


model = Tagger()
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
for step in range(150):
    x, y = make_batch()
    loss = F.binary_cross_entropy_with_logits(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 30 == 0:
        print(f"step {step:3d} loss {loss.item():.4f}")

with torch.no_grad():
    x, y = make_batch()
    acc = ((model(x) > 0).float() == y).float().mean().item()
print(f"held-out step accuracy {acc:.3f}")
