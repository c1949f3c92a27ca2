"""Train a GRU keyword classifier on synthetic variable-length "MFCC" sequences (each class has its
own frequency pattern). The collate function pads the batch and sorts the sequences by length in
descending order so that pack_padded_sequence can be used with enforce_sorted=True, but it returns
the labels in the original, unsorted order. Every batch pairs most utterances with another
utterance's label, so the classifier learns from shuffled targets; shapes match and no error or
warning is raised.

Source: https://github.com/fartashf/vsepp/pull/36
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_sequence
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)
N_CLASSES, FEAT = 4, 13


class Utterances(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(1)
        self.items = []
        for _ in range(n):
            c = int(torch.randint(0, N_CLASSES, (1,), generator=g))
            T = int(torch.randint(8, 30, (1,), generator=g))
            t = torch.arange(T).float()[:, None]
            base = torch.sin(t * (0.3 + 0.4 * c) + torch.arange(FEAT).float() * 0.2)
            self.items.append((base + 0.3 * torch.randn(T, FEAT, generator=g), c))

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def collate(batch):
    feats = [b[0] for b in batch]
    labels = torch.tensor([b[1] for b in batch])
    lengths = torch.tensor([f.size(0) for f in feats])
    order = torch.argsort(lengths, descending=True)
    padded = pad_sequence([feats[i] for i in order], batch_first=True)
    return padded, lengths[order], labels  # BUG-LINE


class KWS(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(FEAT, 48, batch_first=True)
        self.out = nn.Linear(48, N_CLASSES)

    def forward(self, x, lengths):
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=True)
        _, h = self.gru(packed)
        return self.out(h[-1])


loader = DataLoader(
    Utterances(384), batch_size=32, shuffle=True, collate_fn=collate, generator=torch.Generator().manual_seed(0)
)
model = KWS()
opt = torch.optim.Adam(model.parameters(), lr=5e-3)
for epoch in range(3):
    for x, lengths, y in loader:
        loss = F.cross_entropy(model(x, lengths), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
correct = total = 0
with torch.no_grad():
    for x, lengths, y in DataLoader(Utterances(384), batch_size=1, collate_fn=collate):
        correct += int((model(x, lengths).argmax(1) == y).sum())
        total += 1
print("final loss", round(loss.item(), 4), "per-utterance accuracy", round(correct / total, 3))
