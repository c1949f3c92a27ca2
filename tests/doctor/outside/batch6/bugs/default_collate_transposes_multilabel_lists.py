"""The dataset returns each sample's multi-hot tags as a plain Python list. ``default_collate`` turns a list
field into a list of per-position tensors (one tensor per tag slot, each holding that slot across the batch),
and the training code stacks that along dim 1 assuming it was per-sample, so row i of the target is really
column i of the batch: targets are shuffled across samples and the multi-label model learns noise silently.

Source: https://github.com/pytorch/pytorch/issues/50272
"""

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)


class TagDataset(Dataset):
    def __init__(self, n=256):
        self.x = torch.randn(n, 6)
        self.tags = (self.x > 0.3).int().tolist()

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"x": self.x[i], "tags": self.tags[i]}


model = nn.Linear(6, 6)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
loader = DataLoader(TagDataset(), batch_size=6, shuffle=True)
for step, batch in enumerate(loader):
    target = torch.stack(batch["tags"], dim=0).float()  # BUG-LINE
    loss = F.binary_cross_entropy_with_logits(model(batch["x"]), target)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step == 9:
        break
