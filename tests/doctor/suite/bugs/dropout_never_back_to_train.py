"""MLP classifier with dropout; the validation at step 0 calls model.eval() and never model.train() again.

doctor-expect: train_in_eval_mode
"""

import torch
from torch import nn

torch.manual_seed(0)
X, y = torch.randn(1024, 16), torch.randint(0, 4, (1024,))
Xv, yv = torch.randn(128, 16), torch.randint(0, 4, (128,))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(16, 128), nn.ReLU(), nn.Dropout(0.3), nn.Linear(128, 4))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)


def evaluate():
    model.eval()
    with torch.no_grad():
        return (model(Xv).argmax(1) == yv).float().mean().item()


for step, (xb, yb) in enumerate(loader):
    if step % 50 == 0:
        acc = evaluate()
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
