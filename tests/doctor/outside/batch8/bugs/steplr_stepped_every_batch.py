"""StepLR configured in epochs but stepped after every batch.

step_size is set to half the number of epochs, yet scheduler.step() is called
inside the batch loop, so the learning rate is decayed every few iterations
and reaches ~0 almost immediately; the model stops learning without any error.
Source: https://github.com/Lornatang/SRGAN-PyTorch/issues/1
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
EPOCHS = 4
model = nn.Linear(8, 1)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=EPOCHS // 2, gamma=0.1)
x = torch.randn(32, 8)
y = x.sum(1, keepdim=True)

for _epoch in range(EPOCHS):
    for i in range(0, 32, 16):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x[i : i + 16]), y[i : i + 16])
        loss.backward()
        opt.step()
        sched.step()  # BUG-LINE
print(f"loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.2e}")
