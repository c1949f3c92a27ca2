"""Binary-output recommendation model whose forward already ends in a sigmoid, trained with BCELoss.

Unusual but correct: the model returns probabilities (nn.Sigmoid is the last
layer because downstream serving consumes probabilities), and the matching
loss nn.BCELoss is used on those probabilities, not BCEWithLogitsLoss, so the
sigmoid is applied exactly once. Targets are float 0/1 with the same shape as
the output. Probabilities are clamped away from 0/1 only for the log-loss
printout; BCELoss itself clamps its log terms internally.

Source: https://github.com/NVIDIA-Merlin/models/pull/1175
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(2)

N_USERS, N_ITEMS, D = 60, 40, 8


class BinaryRec(nn.Module):
    def __init__(self):
        super().__init__()
        self.user = nn.Embedding(N_USERS, D)
        self.item = nn.Embedding(N_ITEMS, D)
        self.mlp = nn.Sequential(nn.Linear(3 * D, 64), nn.ReLU(), nn.Linear(64, 1), nn.Sigmoid())

    def forward(self, u, i):
        eu, ei = self.user(u), self.item(i)
        return self.mlp(torch.cat([eu, ei, eu * ei], dim=-1)).squeeze(-1)


true_u = torch.randn(N_USERS, 4)
true_i = torch.randn(N_ITEMS, 4)
u = torch.randint(0, N_USERS, (20000,))
i = torch.randint(0, N_ITEMS, (20000,))
p_click = torch.sigmoid(2 * (true_u[u] * true_i[i]).sum(-1) - 0.5)
y = (torch.rand(20000) < p_click).float()
u_va, i_va, y_va = u[18000:], i[18000:], y[18000:]

model = BinaryRec()
criterion = nn.BCELoss()
opt = torch.optim.Adam(model.parameters(), lr=5e-3, weight_decay=1e-5)

for step in range(300):
    idx = torch.randint(0, 18000, (256,))
    prob = model(u[idx], i[idx])
    loss = criterion(prob, y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0 or step == 299:
        with torch.no_grad():
            pv = model(u_va, i_va).clamp(1e-6, 1 - 1e-6)
            val = criterion(pv, y_va).item()
            acc = ((pv > 0.5).float() == y_va).float().mean().item()
        print(f"step {step:3d} train {loss.item():.4f} val {val:.4f} val_acc {acc:.3f}")
