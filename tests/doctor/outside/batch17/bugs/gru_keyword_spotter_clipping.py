"""Keyword spotter: a GRU over synthetic log-mel frames, trained with SGD and gradient-norm clipping.

Bug: torch.nn.utils.clip_grad_norm_ is called after optimizer.step(). The step has already used the
unclipped gradients, and the clipped gradients are thrown away by the next zero_grad(), so the
clipping has no effect on training at all. The run completes and the norm is logged as if clipping
were active. The referenced page states that clip_grad_norm_ must be called before
optimizer.step(), and that calling it after the step is a silent bug.

Source: https://theneuralbase.com/pytorch/learn/intermediate/gradient-exploding-gradient-clipping/
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

N_MELS, FRAMES, N_WORDS = 20, 24, 5


def synth_batch(bs=32):
    labels = torch.randint(0, N_WORDS, (bs,))
    t = torch.linspace(0, 1, FRAMES)
    x = 0.3 * torch.randn(bs, FRAMES, N_MELS)
    for i, c in enumerate(labels.tolist()):
        band = 2 + 3 * c
        centre = 0.2 + 0.15 * c
        env = torch.exp(-((t - centre) ** 2) / 0.01)
        x[i, :, band : band + 3] += 2.0 * env.unsqueeze(-1)
    return x, labels


class KWS(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.gru = nn.GRU(N_MELS, hidden, num_layers=1, batch_first=True)
        self.fc = nn.Linear(hidden, N_WORDS)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.fc(out[:, -1])


def main():
    model = KWS()
    opt = torch.optim.SGD(model.parameters(), lr=1.0, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(80):
        x, y = synth_batch()
        logits = model(x)
        loss = loss_fn(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)  # BUG-LINE
        if step % 10 == 0 or step == 79:
            acc = (logits.argmax(-1) == y).float().mean().item()
            print(f"step {step:3d} loss {loss.item():.4f} acc {acc:.2f} grad_norm {norm.item():.3f}")


if __name__ == "__main__":
    main()
