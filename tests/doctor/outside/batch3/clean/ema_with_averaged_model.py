"""An exponential moving average of the weights kept with ``torch.optim.swa_utils.AveragedModel`` (updated after
every step, never stepped by an optimizer, used for evaluation under no_grad). Correct: the EMA copy is meant to
get no gradient.

Source: https://discuss.pytorch.org/t/ddp-before-or-after-optim/190795
"""

import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.1), nn.Linear(32, 2))
ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.99))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
X, y = torch.randn(256, 8), torch.randint(0, 2, (256,))
for i in range(0, 256, 32):
    model.train()
    loss = F.cross_entropy(model(X[i : i + 32]), y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()
    ema.update_parameters(model)
    if i % 128 == 0:
        ema.eval()
        with torch.no_grad():
            val_acc = (ema(X[:64]).argmax(1) == y[:64]).float().mean().item()
