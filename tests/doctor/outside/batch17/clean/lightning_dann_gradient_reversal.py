"""Domain-adversarial training (DANN) in Lightning with a custom gradient-reversal Function.

Clean program. Unusual on purpose: a torch.autograd.Function is the identity in forward
(returns x.view_as(x)) and multiplies the incoming gradient by -lambda in backward, so
the domain classifier minimises the domain loss while the shared feature extractor
receives the reversed gradient and is pushed to make the domains indistinguishable; lambda
follows the 2/(1+exp(-10p)) - 1 schedule and is exactly 0 at the first step; target-domain
samples have no labels and only enter the domain loss; a single optimizer trains all three
parts with one summed loss. The report explains that the reversal only affects the layers
before the domain classifier, which is what this program relies on.

Source: https://github.com/fungtion/DANN/issues/3
"""

import math

import lightning.pytorch as pl
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)

D_IN, C = 10, 3
class_means = torch.randn(C, D_IN) * 1.5
shift = torch.randn(D_IN) * 1.5


def domain_data(n, shifted, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, C, (n,), generator=g)
    x = class_means[y] + torch.randn(n, D_IN, generator=g)
    if shifted:
        x = x * 0.8 + shift
    return x, y


class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, lambd):
        ctx.lambd = lambd
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.neg() * ctx.lambd, None


class DANN(pl.LightningModule):
    def __init__(self, total_steps):
        super().__init__()
        self.total_steps = total_steps
        self.features = nn.Sequential(nn.Linear(D_IN, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU())
        self.label_head = nn.Linear(32, C)
        self.domain_head = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))

    def training_step(self, batch, batch_idx):
        xs, ys, xt = batch
        p = self.global_step / self.total_steps
        lambd = 2.0 / (1.0 + math.exp(-10 * p)) - 1.0
        fs, ft = self.features(xs), self.features(xt)
        cls_loss = F.cross_entropy(self.label_head(fs), ys)
        feats = torch.cat([fs, ft])
        dom_logits = self.domain_head(GradReverse.apply(feats, lambd)).squeeze(-1)
        dom_labels = torch.cat([torch.zeros(len(xs)), torch.ones(len(xt))])
        dom_loss = F.binary_cross_entropy_with_logits(dom_logits, dom_labels)
        if self.global_step % 30 == 0:
            print(
                f"step {self.global_step:3d}  lambda {lambd:.3f}  cls {cls_loss.item():.4f}  dom {dom_loss.item():.4f}"
            )
        return cls_loss + dom_loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.02, momentum=0.9)


xs, ys = domain_data(1024, False, 1)
xt, yt = domain_data(1024, True, 2)
dl = DataLoader(TensorDataset(xs, ys, xt), batch_size=64, shuffle=True)
EPOCHS = 10
model = DANN(total_steps=EPOCHS * len(dl))
trainer = pl.Trainer(
    max_epochs=EPOCHS,
    accelerator="cpu",
    devices=1,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
)
trainer.fit(model, dl)
with torch.no_grad():
    acc_s = (model.label_head(model.features(xs)).argmax(1) == ys).float().mean().item()
    acc_t = (model.label_head(model.features(xt)).argmax(1) == yt).float().mean().item()
print(f"source acc {acc_s:.3f}  target acc (labels never used in training) {acc_t:.3f}")
