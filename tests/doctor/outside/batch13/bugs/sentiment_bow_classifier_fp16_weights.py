"""Bag-of-words sentiment classifier fine-tuned with the whole model stored in float16.

Source: https://github.com/Nerogar/OneTrainer/issues/146

Bug: to save memory the model is converted to float16 (`.to(torch.float16)`) and trained directly
with a plain optimizer, with no float32 master copy of the weights. With a small learning rate,
each update `lr * grad` is smaller than the float16 spacing around the weight value, so
`w - lr * grad` rounds back to `w`: most weights never change. No error, no NaN; the loss moves
only a little (mostly through the few near-zero parameters such as biases) and the model "trains
nothing". Fix: keep float32 weights (use autocast for the low-precision compute) or keep an fp32
master copy.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB = 300


def make_docs(n, gen):
    # words 0-49 positive cues, 50-99 negative cues, rest neutral
    y = torch.randint(0, 2, (n,), generator=gen)
    x = torch.zeros(n, VOCAB)
    for i in range(n):
        neutral = torch.randint(100, VOCAB, (20,), generator=gen)
        cue_lo = 0 if y[i] == 1 else 50
        cues = torch.randint(cue_lo, cue_lo + 50, (3,), generator=gen)
        x[i].index_add_(0, torch.cat([neutral, cues]), torch.ones(23))
    return torch.log1p(x), y


class BowClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(VOCAB, 64)
        self.fc2 = nn.Linear(64, 2)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def main():
    gen = torch.Generator().manual_seed(0)
    x, y = make_docs(512, gen)
    model = BowClassifier().to(torch.float16)  # BUG-LINE
    w0 = model.fc1.weight.detach().clone()
    opt = torch.optim.SGD(model.parameters(), lr=2e-3, momentum=0.9)
    bs = 32
    for epoch in range(5):
        perm = torch.randperm(len(y))
        tot, correct = 0.0, 0
        for i in range(0, len(y), bs):
            idx = perm[i : i + bs]
            logits = model(x[idx].to(torch.float16)).float()
            loss = F.cross_entropy(logits, y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item() * len(idx)
            correct += (logits.argmax(1) == y[idx]).sum().item()
        moved = (model.fc1.weight != w0).float().mean().item()
        print(f"epoch {epoch} loss {tot / len(y):.4f} acc {correct / len(y):.3f} fc1_weights_changed {moved:.3f}")


if __name__ == "__main__":
    main()
