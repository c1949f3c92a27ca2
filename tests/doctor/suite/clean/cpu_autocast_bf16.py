"""Clean: mixed precision done right on CPU: the forward under torch.autocast(bfloat16), fp32 master weights,
the loss in fp32, gradient clipping after backward."""

import torch
from torch import nn

torch.manual_seed(0)
X, y = torch.randn(1024, 32), torch.randint(0, 8, (1024,))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.LayerNorm(128), nn.Linear(128, 8))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for xb, yb in loader:
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(xb)
    loss = nn.functional.cross_entropy(logits.float(), yb)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
