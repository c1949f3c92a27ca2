"""Multi-class classification of synthetic tabular data (numeric features plus an embedded categorical column) with an MLP trained with nn.CrossEntropyLoss. The model's head ends in nn.Softmax, but CrossEntropyLoss already applies log-softmax to its input and expects raw logits: the loss is computed on softmax(softmax(logits)), which squashes every input into a narrow range, the loss cannot go much below log(K) minus a little, and gradients are tiny. It runs, accuracy even rises slowly, and there is no warning; the wrong loss is used from the first step.
Source: https://github.com/NaJaeMin92/pytorch-DANN/issues/7
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
N, NUM, CATS, K = 2048, 10, 12, 5
x_num = torch.randn(N, NUM)
x_cat = torch.randint(0, CATS, (N,))
cat_effect = torch.randn(CATS, K)
logits_true = x_num @ torch.randn(NUM, K) + 2 * cat_effect[x_cat]
y = logits_true.argmax(1)


class TabularNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(CATS, 4)
        self.body = nn.Sequential(nn.Linear(NUM + 4, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Sequential(nn.Linear(64, K), nn.Softmax(dim=1))  # BUG-LINE

    def forward(self, xn, xc):
        return self.head(self.body(torch.cat([xn, self.emb(xc)], dim=1)))


model = TabularNet()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
for step in range(50):
    idx = torch.randint(0, N, (128,))
    loss = criterion(model(x_num[idx], x_cat[idx]), y[idx])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f}")

with torch.no_grad():
    acc = (model(x_num, x_cat).argmax(1) == y).float().mean().item()
print("train acc", round(acc, 4), "final loss", round(loss.item(), 4))
