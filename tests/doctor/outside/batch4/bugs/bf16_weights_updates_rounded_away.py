"""To save memory the whole model is cast to bfloat16 and trained with AdamW at lr 6e-4, with no fp32 master
copy. bfloat16 has 8 bits of mantissa, so for weights of magnitude ~0.1-1 an update of ~6e-4 is below half an
ulp and rounds back to the old value: most parameters never change while the loop runs normally.

Source: https://github.com/workofart/ml-by-hand/pull/85
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 8))
model = model.to(torch.bfloat16)  # BUG-LINE
opt = torch.optim.AdamW(model.parameters(), lr=6e-4, weight_decay=0.0)
X, y = torch.randn(160, 32), torch.randint(0, 8, (160,))
for i in range(0, 160, 32):
    logits = model(X[i : i + 32].to(torch.bfloat16))
    loss = F.cross_entropy(logits.float(), y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()
