"""Clean: gradient accumulation over 4 micro-batches (loss / 4), clip, step, zero_grad after the step."""

import torch
from torch import nn

torch.manual_seed(0)
X, y = torch.randn(1024, 12), torch.randint(0, 3, (1024,))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=16, shuffle=True)
model = nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 3))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
accum = 4
for i, (xb, yb) in enumerate(loader):
    loss = nn.functional.cross_entropy(model(xb), yb) / accum
    loss.backward()
    if (i + 1) % accum == 0:
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
