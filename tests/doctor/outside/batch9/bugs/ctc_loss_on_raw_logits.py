"""CTC loss is fed raw logits instead of log-probabilities.

torch.nn.functional.ctc_loss expects log_softmax outputs. Passing unnormalised logits makes the
objective meaningless (it can go negative, and adding a constant to all logits lowers it while
the softmax is unchanged), so the gradients from the first step push logits up instead of
learning the alignment.
Source: https://github.com/gwx314/STARS/issues/9
"""

import torch
import torch.nn.functional as F

torch.manual_seed(0)
T, N, C, S = 20, 4, 6, 5
model = torch.nn.GRU(8, 16)
head = torch.nn.Linear(16, C)
opt = torch.optim.Adam(list(model.parameters()) + list(head.parameters()), lr=1e-2)
targets = torch.randint(1, C, (N, S))
in_lens = torch.full((N,), T, dtype=torch.long)
tgt_lens = torch.full((N,), S, dtype=torch.long)

for _step in range(8):
    x = torch.randn(T, N, 8)
    h, _ = model(x)
    logits = head(h)
    loss = F.ctc_loss(logits, targets, in_lens, tgt_lens, blank=0)  # BUG-LINE
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"ctc loss {loss.item():.4f}")
