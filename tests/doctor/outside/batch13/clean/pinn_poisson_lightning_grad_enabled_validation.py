"""Physics-informed neural network for the 1-D Poisson problem
u''(x) = -pi^2 sin(pi x), u(0) = u(1) = 0, trained with PyTorch Lightning (clean).

Unusual but correct: the PDE residual needs d2u/dx2 of the network output with
respect to its input, computed with torch.autograd.grad(create_graph=True) so
that the residual loss back-propagates into the weights. Validation also needs
input gradients, so the Trainer is built with inference_mode=False and the
validation step re-enables grad locally; the error against the exact solution
sin(pi x) is reported.

Source: https://github.com/rezaakb/pinns-torch/issues/12
"""

import math

import lightning.pytorch as pl
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
torch.set_num_threads(2)


def second_derivative(u, x):
    du = torch.autograd.grad(u, x, grad_outputs=torch.ones_like(u), create_graph=True)[0]
    return torch.autograd.grad(du, x, grad_outputs=torch.ones_like(du), create_graph=True)[0]


class PINN(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))

    def residual(self, x):
        x = x.clone().requires_grad_(True)
        u = self.net(x)
        return second_derivative(u, x) + math.pi**2 * torch.sin(math.pi * x)

    def training_step(self, batch, batch_idx):
        (x,) = batch
        pde = self.residual(x).pow(2).mean()
        xb = torch.tensor([[0.0], [1.0]])
        bc = self.net(xb).pow(2).mean()
        loss = pde + 10.0 * bc
        if self.global_step % 200 == 0:
            print(f"step {self.global_step:4d}  pde {pde.item():.5f}  bc {bc.item():.6f}")
        return loss

    def validation_step(self, batch, batch_idx):
        (x,) = batch
        with torch.enable_grad():
            res = self.residual(x).pow(2).mean()
        err = (self.net(x) - torch.sin(math.pi * x)).abs().max()
        print(f"validation  residual {res.item():.5f}  max abs error {err.item():.5f}")

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=3e-3)


train = DataLoader(TensorDataset(torch.rand(2048, 1)), batch_size=256, shuffle=True)
val = DataLoader(TensorDataset(torch.linspace(0, 1, 101)[:, None]), batch_size=101)
trainer = pl.Trainer(
    max_steps=800,
    accelerator="cpu",
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    inference_mode=False,
    check_val_every_n_epoch=50,
    num_sanity_val_steps=0,
)
trainer.fit(PINN(), train, val)
