"""Clean: mixed precision (fp16 autocast, GradScaler) in the documented order: scale, backward, unscale_,
clip, step, update."""

import torch
from torch import nn

torch.manual_seed(0)
X, y = torch.randn(512, 20), torch.randint(0, 5, (512,))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 5))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
scaler = torch.amp.GradScaler("cpu")  # on a GPU: torch.amp.GradScaler("cuda")
for xb, yb in loader:
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.float16):
        loss = nn.functional.cross_entropy(model(xb), yb)
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
