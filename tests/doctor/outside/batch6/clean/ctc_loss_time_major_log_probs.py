"""A speech-style recogniser trained with CTC: the model emits (T, N, C) scores, ``log_softmax`` is applied
over the class axis, blank is index 0 and never a target, and per-sample input/target lengths are passed.
Targets shorter than the input and a loss that is not a per-frame cross-entropy are expected for CTC.

Source: https://pytorch.org/docs/stable/generated/torch.nn.CTCLoss.html
"""

import torch
from torch import nn

torch.manual_seed(0)
C, T, N = 12, 30, 8
model = nn.GRU(20, 32, batch_first=False)
proj = nn.Linear(32, C)
ctc = nn.CTCLoss(blank=0, zero_infinity=True)
opt = torch.optim.Adam(list(model.parameters()) + list(proj.parameters()), lr=1e-3)
for _step in range(4):
    x = torch.randn(T, N, 20)
    input_lengths = torch.randint(20, T + 1, (N,))
    target_lengths = torch.randint(3, 8, (N,))
    targets = torch.randint(1, C, (int(target_lengths.sum()),))
    h, _ = model(x)
    log_probs = proj(h).log_softmax(dim=2)
    loss = ctc(log_probs, targets, input_lengths, target_lengths)
    opt.zero_grad()
    loss.backward()
    opt.step()
