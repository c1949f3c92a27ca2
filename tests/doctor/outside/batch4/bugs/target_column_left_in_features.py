"""A tabular pipeline copies the label into the data frame for bookkeeping and then builds the feature matrix
from all columns, so the target is one of the input features. The classifier learns to read the label off
that column, the training loss collapses to near zero, and the model is useless on data without labels.

Source: https://github.com/neurodata/SPORF/issues/355
"""

import torch
import torch.nn.functional as F
from torch import nn

torch.manual_seed(0)
raw = torch.randn(256, 9)
target = (raw[:, 0] + 0.5 * raw[:, 3] > 0).long()
table = torch.cat([raw, target[:, None].float()], dim=1)  # label stored alongside the raw columns
feature_cols = list(range(table.shape[1]))  # BUG-LINE
features = table[:, feature_cols]
model = nn.Sequential(nn.Linear(features.shape[1], 32), nn.ReLU(), nn.Linear(32, 2))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for i in range(0, 256, 32):
    loss = F.cross_entropy(model(features[i : i + 32]), target[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()
