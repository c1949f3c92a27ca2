"""A hypernetwork that generates the weights of a per-task target MLP.

Source: https://mlkatas.com/kata/78

The exercise describes a HyperNet that maps a latent vector to one long vector, which
is sliced and reshaped into (w1, b1, w2, b2) for a TargetNet whose forward takes the
weights as arguments and uses F.linear. This program trains such a pair on a family
of 1-D regression tasks (y = a*x + b*x^2) where each task has a learned embedding z.
Unusual on purpose: the target network owns no parameters at all (its weights are
activations of the hypernetwork and receive gradients only through it), task
embeddings are an nn.Embedding whose rows are only updated when that task is in the
batch, and tasks are sampled at random.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N_TASKS, Z, H = 16, 8, 32
task_a = torch.randn(N_TASKS)
task_b = torch.randn(N_TASKS) * 0.5
SIZES = [(H, 1), (H,), (1, H), (1,)]
N_PARAMS = sum(torch.Size(s).numel() for s in SIZES)


class HyperNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.task_emb = nn.Embedding(N_TASKS, Z)
        self.gen = nn.Sequential(nn.Linear(Z, 64), nn.ReLU(), nn.Linear(64, N_PARAMS))

    def forward(self, task_id):
        flat = self.gen(self.task_emb(task_id)) * 0.3
        out, i = [], 0
        for s in SIZES:
            n = torch.Size(s).numel()
            out.append(flat[i : i + n].view(s))
            i += n
        return out


def target_forward(x, w1, b1, w2, b2):
    return F.linear(torch.tanh(F.linear(x, w1, b1)), w2, b2)


hyper = HyperNet()
opt = torch.optim.Adam(hyper.parameters(), lr=2e-3)
for step in range(1, 801):
    loss = 0.0
    for t in torch.randint(0, N_TASKS, (4,)).tolist():
        x = torch.rand(32, 1) * 4 - 2
        y = task_a[t] * x + task_b[t] * x.pow(2)
        loss = loss + F.mse_loss(target_forward(x, *hyper(torch.tensor(t))), y)
    loss = loss / 4
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 200 == 0:
        print(f"step {step} mse {loss.item():.4f}")
