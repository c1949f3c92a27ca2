"""Raw-waveform tone classifier trained with a hand-written Lookahead wrapper around Adam.

Unusual on purpose: the optimizer keeps a second, gradient-free copy of every parameter (the slow
weights, requires_grad=False tensors stored in optimizer state). Every k inner Adam steps the slow
weights move towards the fast weights by alpha and the fast weights are then overwritten with the
slow ones through .data writes. Between syncs the model parameters are changed only by Adam. The
wrapper forwards param_groups / state_dict / load_state_dict to the base optimizer so that
checkpointing works, which is what the referenced issue ("Lookahead has no attribute 'state'") was
missing; the program saves and reloads the optimizer state halfway through training.

Source: https://github.com/lonePatient/lookahead_pytorch/issues/3
"""

import math

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

SR, N_CLASSES = 2000, 4
FREQS = [110.0, 220.0, 330.0, 440.0]


class Lookahead:
    def __init__(self, base, k=5, alpha=0.5):
        self.base, self.k, self.alpha = base, k, alpha
        self.param_groups = base.param_groups
        self.steps = 0
        self.slow = {id(p): p.detach().clone() for g in self.param_groups for p in g["params"]}

    def zero_grad(self, set_to_none=True):
        self.base.zero_grad(set_to_none=set_to_none)

    def step(self):
        self.base.step()
        self.steps += 1
        if self.steps % self.k == 0:
            for g in self.param_groups:
                for p in g["params"]:
                    slow = self.slow[id(p)]
                    slow += self.alpha * (p.data - slow)
                    p.data.copy_(slow)

    def state_dict(self):
        params = [p for g in self.param_groups for p in g["params"]]
        return {"base": self.base.state_dict(), "steps": self.steps, "slow": [self.slow[id(p)].clone() for p in params]}

    def load_state_dict(self, sd):
        self.base.load_state_dict(sd["base"])
        self.steps = sd["steps"]
        params = [p for g in self.param_groups for p in g["params"]]
        for p, s in zip(params, sd["slow"]):
            self.slow[id(p)] = s.clone()


def synth(bs=32, n=800):
    y = torch.randint(0, N_CLASSES, (bs,))
    t = torch.arange(n) / SR
    f = torch.tensor(FREQS)[y].unsqueeze(1)
    phase = torch.rand(bs, 1) * 2 * math.pi
    x = torch.sin(2 * math.pi * f * t + phase) + 0.5 * torch.randn(bs, n)
    return x.unsqueeze(1), y


class WaveCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(1, 16, 31, stride=4),
            nn.ReLU(),
            nn.Conv1d(16, 32, 9, stride=2),
            nn.ReLU(),
            nn.Conv1d(32, 32, 9, stride=2),
            nn.ReLU(),
            nn.AdaptiveAvgPool1d(1),
            nn.Flatten(),
            nn.Linear(32, N_CLASSES),
        )

    def forward(self, x):
        return self.net(x)


def main():
    model = WaveCNN()
    opt = Lookahead(torch.optim.Adam(model.parameters(), lr=2e-3), k=5, alpha=0.5)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(100):
        x, y = synth()
        logits = model(x)
        loss = loss_fn(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step == 50:
            ckpt = {"model": {k: v.clone() for k, v in model.state_dict().items()}, "opt": opt.state_dict()}
            model.load_state_dict(ckpt["model"])
            opt.load_state_dict(ckpt["opt"])
        if step % 20 == 0 or step == 99:
            acc = (logits.argmax(1) == y).float().mean().item()
            print(f"step {step:3d} loss {loss.item():.4f} acc {acc:.2f}")


if __name__ == "__main__":
    main()
