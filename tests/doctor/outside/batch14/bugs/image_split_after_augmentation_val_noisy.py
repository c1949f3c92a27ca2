"""Small CNN on synthetic 16x16 images with a held-out validation split.

The dataset object is built with the random training augmentation (random
flips, random shifts and additive noise) and only then split into train and
validation subsets with random_split. Both Subsets share the same underlying
dataset and therefore the same transform, so the validation images are
randomly augmented on every pass: validation accuracy is measured on
perturbed inputs, changes from run to run of the same weights, and is not
comparable to the test-time setting. Nothing warns about it.

Source: https://github.com/gpleiss/efficient_densenet_pytorch/issues/51
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, random_split

torch.manual_seed(0)
torch.set_num_threads(2)


def train_transform(img):
    if torch.rand(()) < 0.5:
        img = img.flip(-1)
    shift = int(torch.randint(-3, 4, ()))
    img = img.roll(shift, dims=-2)
    return img + 0.5 * torch.randn_like(img)


def eval_transform(img):
    return img


class Shapes(Dataset):
    def __init__(self, n, transform):
        self.transform = transform
        g = torch.Generator().manual_seed(1)
        self.labels = torch.randint(0, 3, (n,), generator=g)
        self.images = torch.zeros(n, 1, 16, 16)
        for i, y in enumerate(self.labels.tolist()):
            r, c = torch.randint(3, 10, (2,), generator=g).tolist()
            if y == 0:
                self.images[i, 0, r : r + 4, c : c + 4] = 1.0
            elif y == 1:
                self.images[i, 0, r, c : c + 6] = 1.0
                self.images[i, 0, r + 3, c : c + 6] = 1.0
            else:
                self.images[i, 0, r : r + 6, c] = 1.0
        self.images += 0.1 * torch.randn(self.images.shape, generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.transform(self.images[i]), self.labels[i]


full = Shapes(2400, train_transform)
train_set, val_set = random_split(full, [2000, 400], generator=torch.Generator().manual_seed(0))  # BUG-LINE
train_loader = DataLoader(train_set, batch_size=64, shuffle=True)
val_loader = DataLoader(val_set, batch_size=200)

model = nn.Sequential(
    nn.Conv2d(1, 16, 3, padding=1),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    nn.Flatten(),
    nn.Linear(32, 3),
)
opt = torch.optim.Adam(model.parameters(), lr=2e-3)


def evaluate():
    model.eval()
    correct = 0
    with torch.no_grad():
        for xb, yb in val_loader:
            correct += (model(xb).argmax(-1) == yb).sum().item()
    model.train()
    return correct / len(val_set)


for epoch in range(4):
    for xb, yb in train_loader:
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"epoch {epoch} loss {loss.item():.4f} val_acc {evaluate():.3f} val_acc_again {evaluate():.3f}")
