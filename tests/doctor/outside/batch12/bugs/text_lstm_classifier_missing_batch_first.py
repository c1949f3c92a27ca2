"""Trains an embedding + LSTM sentence classifier on a synthetic token task (label = whether a
trigger token occurs anywhere in the sentence). Batches are built batch-major, (batch, seq, emb),
and the classifier reads `out[:, -1]` as "last time step of every sentence", but the LSTM is
constructed without `batch_first=True`, so it treats the batch axis as time: the recurrence runs
across different sentences and the feature read for each sentence is the state at one fixed
token position. Every shape still lines up and nothing is raised or warned, but the model cannot
see most of each sentence and the loss stays at chance level.

Source: https://github.com/facebookresearch/fairseq/issues/2449
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
torch.set_flush_denormal(True)

VOCAB, EMB, HID, SEQ, BATCH = 30, 32, 64, 12, 32
TRIGGER = 7


def make_batch(n):
    tokens = torch.randint(8, VOCAB, (n, SEQ))
    labels = torch.randint(0, 2, (n,))
    for i in range(n):
        if labels[i] == 1:
            tokens[i, torch.randint(0, SEQ, (1,))] = TRIGGER
    return tokens, labels


class LSTMClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, EMB)
        self.lstm = nn.LSTM(EMB, HID, num_layers=1)  # BUG-LINE
        self.out = nn.Linear(HID, 2)

    def forward(self, tokens):
        x = self.emb(tokens)  # (batch, seq, emb)
        out, _ = self.lstm(x)
        return self.out(out[:, -1])  # last step of every sequence


model = LSTMClassifier()
opt = torch.optim.Adam(model.parameters(), lr=5e-3)

for step in range(120):
    tokens, labels = make_batch(BATCH)
    loss = F.cross_entropy(model(tokens), labels)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 30 == 0:
        print(f"step {step} loss {loss.item():.4f}")

with torch.no_grad():
    tokens, labels = make_batch(512)
    acc = (model(tokens).argmax(-1) == labels).float().mean().item()
print(f"final accuracy {acc:.3f}")
