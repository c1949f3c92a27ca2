"""Gradient accumulation sums micro-batch losses without dividing by the number of accumulation steps.

Each micro-batch loss is already a mean; calling backward on it accum_steps times without
scaling makes the accumulated gradient accum_steps times larger than the large-batch gradient,
so the effective learning rate at every optimizer step is multiplied by accum_steps.
Source: https://github.com/hirofumi0810/neural_sp/issues/168
"""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
loss_fn = torch.nn.CrossEntropyLoss()
accum_steps = 4

for _step in range(6):
    opt.zero_grad()
    for _micro in range(accum_steps):
        x = torch.randn(8, 20)
        y = torch.randint(0, 3, (8,))
        loss = loss_fn(model(x), y)
        loss.backward()  # BUG-LINE
    opt.step()
print(f"last micro-batch loss {loss.item():.4f}")
