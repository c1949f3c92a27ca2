"""A smoothed loss for the progress line kept as a tensor: ``smooth = 0.9 * smooth + 0.1 * loss`` links every
step's graph to the next one, so nothing of any step's graph is ever freed and memory grows step after step.

Source: https://discuss.pytorch.org/t/gpu-memory-increase-while-i-wanna-to-backward-with-accumulative-loss/43284
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
V, H = 32, 48


class CharRNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, H)
        self.rnn = nn.GRU(H, H, batch_first=True)
        self.out = nn.Linear(H, V)

    def forward(self, x):
        y, _ = self.rnn(self.emb(x))
        return self.out(y)  # (B, T, V)


model = CharRNN()
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
stream = torch.randint(0, V, (4, 20 * 16 + 1))
smooth = torch.tensor(0.0)
for i in range(20):
    chunk = stream[:, i * 16 : i * 16 + 17]
    logits = model(chunk[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, V), chunk[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    smooth = 0.9 * smooth + 0.1 * loss  # BUG-LINE
    if i % 5 == 0:
        print(f"step {i}: smoothed loss {smooth.item():.3f}")
