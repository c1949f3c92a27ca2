"""The optimizer is built with three groups (bias, decayed weights, BN weights) in a new order, but the warmup
code still uses ``j == 2`` to pick the group whose lr starts high (0.1) and falls to lr0. The special bias
warmup is applied to the BatchNorm-weight group instead, and the biases warm up from 0 like everything else.

Source: https://github.com/ultralytics/yolov5/issues/8352
"""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(
    nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4)
)
g_bias = [p for n, p in model.named_parameters() if n.endswith(".bias")]
g_decay = [p for n, p in model.named_parameters() if n.endswith(".weight") and p.dim() > 1]
g_bn = [p for n, p in model.named_parameters() if n.endswith(".weight") and p.dim() == 1]
opt = torch.optim.SGD(g_bias, lr=0.01, momentum=0.9)
opt.add_param_group({"params": g_decay, "weight_decay": 5e-4})
opt.add_param_group({"params": g_bn})
lr0, warmup_bias_lr, nw = 0.01, 0.1, 6
X, y = torch.randn(48, 3, 8, 8), torch.randint(0, 4, (48,))
for ni, i in enumerate(range(0, 48, 8)):
    for j, x in enumerate(opt.param_groups):
        start = warmup_bias_lr if j == 2 else 0.0  # BUG-LINE
        x["lr"] = np.interp(ni, [0, nw], [start, lr0])
    loss = F.cross_entropy(model(X[i : i + 8]), y[i : i + 8])
    opt.zero_grad()
    loss.backward()
    opt.step()
