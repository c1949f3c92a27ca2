"""Gradient accumulation across micro-batches silently keeps only the last micro-batch.

The trainer exposes a Tinker-style API: the controller calls ``forward_backward``
once per micro-batch and then ``optim_step`` once per global step.  The
``forward_backward`` method clears the gradients at its start, so every call
throws away the gradients accumulated by the previous micro-batches of the same
global step.  Only the last micro-batch (scaled by 1/num_micro) reaches the
optimizer: the effective batch is 4x smaller than configured and the effective
learning rate is 4x smaller too.  Nothing errors and the loss still falls, just
much more slowly and noisily than with real accumulation.

Source: https://github.com/pytorch/torchtitan/pull/3575
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

CFG = {
    "d_in": 32,
    "hidden": 64,
    "n_classes": 5,
    "global_batch": 64,
    "num_micro": 4,
    "lr": 3e-3,
    "steps": 80,
}


def make_dataset(n=4096):
    w = torch.randn(CFG["d_in"], CFG["n_classes"])
    x = torch.randn(n, CFG["d_in"])
    y = (x @ w + 0.3 * torch.randn(n, CFG["n_classes"])).argmax(-1)
    return x, y


class PolicyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(CFG["d_in"], CFG["hidden"]),
            nn.GELU(),
            nn.Linear(CFG["hidden"], CFG["hidden"]),
            nn.GELU(),
        )
        self.head = nn.Linear(CFG["hidden"], CFG["n_classes"])

    def forward(self, x):
        return self.head(self.body(x))


class Trainer:
    """Worker-side object; the controller drives it through two calls."""

    def __init__(self, model, num_micro):
        self.model = model
        self.num_micro = num_micro
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=CFG["lr"], weight_decay=0.0)
        self.step_count = 0

    def forward_backward(self, microbatch):
        self.optimizer.zero_grad(set_to_none=True)  # BUG-LINE
        x, y = microbatch
        logits = self.model(x)
        loss = F.cross_entropy(logits, y) / self.num_micro
        loss.backward()
        return loss.item() * self.num_micro

    def optim_step(self):
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.step_count += 1


def controller():
    x, y = make_dataset()
    trainer = Trainer(PolicyNet(), CFG["num_micro"])
    mb = CFG["global_batch"] // CFG["num_micro"]
    for step in range(CFG["steps"]):
        idx = torch.randint(0, x.shape[0], (CFG["global_batch"],))
        losses = []
        for k in range(CFG["num_micro"]):
            sl = idx[k * mb : (k + 1) * mb]
            losses.append(trainer.forward_backward((x[sl], y[sl])))
        trainer.optim_step()
        if step % 20 == 0 or step == CFG["steps"] - 1:
            print(f"step {step:4d}  loss {sum(losses) / len(losses):.4f}")
    with torch.no_grad():
        acc = (trainer.model(x).argmax(-1) == y).float().mean().item()
    print(f"train accuracy {acc:.3f}")


if __name__ == "__main__":
    controller()
