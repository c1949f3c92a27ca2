"""Matrix-factorisation rating model (user/item embeddings plus user and item bias terms) trained with Adam on synthetic explicit ratings. After the optimizer has been constructed, the item-bias table is initialised from item popularity by assigning a brand-new nn.Parameter to the embedding's weight. The optimizer still holds the old, now orphaned tensor, so the real item-bias parameter receives gradients every step but is never updated, while nothing errors or warns. The bias stays at its popularity initialisation from the very first step.
Source: https://github.com/openvinotoolkit/nncf/pull/327
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
U, I, D, N = 200, 150, 16, 8000
users = torch.randint(0, U, (N,))
items = torch.randint(0, I, (N,))
true_u, true_i = torch.randn(U, D) / 2, torch.randn(I, D) / 2
item_quality = torch.randn(I)
ratings = (true_u[users] * true_i[items]).sum(1) + item_quality[items] + 3.0 + 0.1 * torch.randn(N)


class MF(nn.Module):
    def __init__(self):
        super().__init__()
        self.user_emb = nn.Embedding(U, D)
        self.item_emb = nn.Embedding(I, D)
        self.user_bias = nn.Embedding(U, 1)
        self.item_bias = nn.Embedding(I, 1)
        self.global_bias = nn.Parameter(torch.tensor(3.0))
        for e in (self.user_emb, self.item_emb):
            nn.init.normal_(e.weight, std=0.1)
        nn.init.zeros_(self.user_bias.weight)

    def forward(self, u, i):
        dot = (self.user_emb(u) * self.item_emb(i)).sum(1)
        return dot + self.user_bias(u).squeeze(1) + self.item_bias(i).squeeze(1) + self.global_bias


model = MF()
optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
counts = torch.bincount(items, minlength=I).float()
pop_init = ((counts + 1).log() - (counts + 1).log().mean()).unsqueeze(1) * 0.1
model.item_bias.weight = nn.Parameter(pop_init.clone())  # BUG-LINE

for step in range(60):
    idx = torch.randint(0, N, (512,))
    pred = model(users[idx], items[idx])
    loss = nn.functional.mse_loss(pred, ratings[idx])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 10 == 0:
        print(f"step {step} mse {loss.item():.4f}")

drift = (model.item_bias.weight - pop_init).abs().max().item()
print("item-bias max change", round(drift, 6), "final mse", round(loss.item(), 4))
