"""Tabular regressor with a frozen "pretrained" embedding table for a categorical column.

Unusual but correct: the product-category column uses nn.Embedding.from_pretrained
(freeze=True) built from vectors learned elsewhere (here: a fixed matrix), so its
weights must not change; a second categorical column has an ordinary trainable
embedding. Only parameters with requires_grad=True are given to the optimizer.
A check at the end confirms the frozen table is bit-identical after training.
Freezing pretrained embeddings with from_pretrained / requires_grad=False and
filtering the optimizer's parameters is shown in this guide.

Source: https://www.codegenes.net/blog/how-to-make-embeddings-non-trainable-pytorch
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)

N_CAT, N_STORE, N = 30, 10, 2000
pretrained = torch.randn(N_CAT, 8)  # stands in for vectors trained elsewhere
true_w = torch.randn(8)
store_eff = torch.randn(N_STORE)
cat = torch.randint(0, N_CAT, (N,))
store = torch.randint(0, N_STORE, (N,))
num = torch.randn(N, 3)
y = pretrained[cat] @ true_w + store_eff[store] + num[:, 0] * 0.5 + 0.1 * torch.randn(N)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.cat_emb = nn.Embedding.from_pretrained(pretrained.clone(), freeze=True)
        self.store_emb = nn.Embedding(N_STORE, 4)
        self.mlp = nn.Sequential(nn.Linear(8 + 4 + 3, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, c, s, x):
        return self.mlp(torch.cat([self.cat_emb(c), self.store_emb(s), x], 1)).squeeze(1)


model = Model()
before = model.cat_emb.weight.clone()
trainable = [p for p in model.parameters() if p.requires_grad]
print("trainable tensors", len(trainable), "of", len(list(model.parameters())))
opt = torch.optim.AdamW(trainable, lr=5e-3, weight_decay=1e-2)
for step in range(150):
    idx = torch.randint(0, N, (128,))
    loss = F.mse_loss(model(cat[idx], store[idx], num[idx]), y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 30 == 0 or step == 149:
        print(f"step {step:3d} mse {loss.item():.4f}")

print("frozen table unchanged:", torch.equal(before, model.cat_emb.weight))
