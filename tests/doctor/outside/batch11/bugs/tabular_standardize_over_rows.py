"""Train an MLP credit-default classifier on a synthetic tabular dataset whose 6 numeric columns live
on very different scales (income in tens of thousands, age in years, ratios near 0..1, counts ...).
Preprocessing is meant to z-score every column with statistics from the training set, but the mean
and standard deviation are taken along axis 1 (across the features of each row) instead of axis 0
(across rows). Each applicant is then standardised against its own features, which wipes out most of
the information in the small-scale columns; shapes match and no error is raised.

Source: https://github.com/EpistasisLab/scikit-rebate/pull/20
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


def make_data(n):
    income = 20000 + 60000 * torch.rand(n)
    age = 20 + 50 * torch.rand(n)
    debt_ratio = torch.rand(n)
    n_cards = torch.randint(0, 10, (n,)).float()
    late_pay = torch.poisson(torch.full((n,), 1.0))
    util = torch.rand(n)
    X = torch.stack([income, age, debt_ratio, n_cards, late_pay, util], 1)
    logit = 3 * (debt_ratio - 0.5) + 0.8 * (late_pay - 1) + 2 * (util - 0.5) - (income - 50000) / 30000
    y = (torch.sigmoid(logit) > torch.rand(n)).float()
    return X, y


X, y = make_data(4000)
Xtr, ytr, Xte, yte = X[:3000], y[:3000], X[3000:], y[3000:]


def standardize(A):
    return (A - A.mean(dim=1, keepdim=True)) / A.std(dim=1, keepdim=True)  # BUG-LINE


model = nn.Sequential(nn.Linear(6, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
Ztr, Zte = standardize(Xtr), standardize(Xte)
for epoch in range(8):
    for idx in torch.randperm(3000).split(128):
        loss = F.binary_cross_entropy_with_logits(model(Ztr[idx]).squeeze(1), ytr[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
with torch.no_grad():
    acc = ((model(Zte).squeeze(1) > 0).float() == yte).float().mean().item()
print("final loss", round(loss.item(), 4), "test accuracy", round(acc, 3))
