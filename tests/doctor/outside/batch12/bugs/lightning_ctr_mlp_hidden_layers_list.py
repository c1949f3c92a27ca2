"""Trains a click-through-rate style MLP on synthetic tabular features with PyTorch Lightning. The
hidden tower is built as a plain Python list of nn.Linear layers instead of an nn.ModuleList, so those
layers are not registered as submodules: self.parameters() (and therefore the optimizer created in
configure_optimizers) only sees the input projection and the output layer, and the hidden layers keep
their random initial weights for the whole run. The forward pass still uses them, so nothing errors or
warns and the loss still decreases through the registered layers.

Source: https://github.com/twitter/the-algorithm-ml/pull/136
"""

import lightning as L
import torch
import torch.nn as nn

torch.manual_seed(0)
N, F = 4096, 20
X = torch.randn(N, F)
logit = X[:, 0] * X[:, 1] - X[:, 2] + torch.sin(2 * X[:, 3]) + 0.5 * X[:, 4] * X[:, 5]
y = (logit + 0.3 * torch.randn(N) > 0).float()


class CTRNet(L.LightningModule):
    def __init__(self, hidden=64, depth=3):
        super().__init__()
        self.inp = nn.Linear(F, hidden)
        self.tower = [nn.Linear(hidden, hidden) for _ in range(depth)]  # BUG-LINE
        self.out = nn.Linear(hidden, 1)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        for layer in self.tower:
            h = torch.relu(layer(h))
        return self.out(h).squeeze(-1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = nn.functional.binary_cross_entropy_with_logits(self(x), y)
        self.log("bce", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=3e-3)


model = CTRNet()
w0 = model.tower[0].weight.detach().clone()
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X[:3072], y[:3072]), batch_size=64, shuffle=True)
L.Trainer(
    max_steps=120,
    logger=False,
    enable_checkpointing=False,
    enable_progress_bar=False,
    accelerator="cpu",
    enable_model_summary=False,
).fit(model, loader)
with torch.no_grad():
    acc = ((model(X[3072:]) > 0).float() == y[3072:]).float().mean().item()
print("hidden layer 0 change:", (model.tower[0].weight.detach() - w0).norm().item(), "test acc:", acc)
