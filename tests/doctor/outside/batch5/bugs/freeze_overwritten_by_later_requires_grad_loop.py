"""The training script freezes the backbone layers listed in ``freeze`` and a few lines later runs a loop that
sets ``requires_grad = True`` on every parameter while sorting them into weight-decay groups. The later loop
silently undoes the freeze, and the whole backbone is fine-tuned.

Source: https://github.com/ultralytics/yolov5/issues/1213
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1),
    nn.BatchNorm2d(16),
    nn.ReLU(),
    nn.Conv2d(16, 16, 3, padding=1),
    nn.BatchNorm2d(16),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    nn.Flatten(),
    nn.Linear(16, 4),
)
freeze = ["0.", "1.", "3.", "4."]
for k, v in model.named_parameters():
    if any(k.startswith(f) for f in freeze):
        v.requires_grad = False
pg_bn, pg_w, pg_b = [], [], []
for k, v in model.named_parameters():
    v.requires_grad = True  # BUG-LINE
    if ".bias" in k:
        pg_b.append(v)
    elif v.dim() == 1:
        pg_bn.append(v)
    else:
        pg_w.append(v)
opt = torch.optim.SGD(pg_bn, lr=1e-2, momentum=0.9)
opt.add_param_group({"params": pg_w, "weight_decay": 5e-4})
opt.add_param_group({"params": pg_b})
for _step in range(5):
    x, y = torch.randn(16, 3, 16, 16), torch.randint(0, 4, (16,))
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
