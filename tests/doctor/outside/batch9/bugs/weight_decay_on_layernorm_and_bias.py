"""AdamW weight decay is applied to every parameter, including LayerNorm weights and biases.

The optimizer is built from model.parameters() with a single weight_decay, so LayerNorm gains,
LayerNorm biases and linear biases are decayed towards zero at every step together with the
matrices. The usual recipe (nanoGPT, HF) puts 1-D parameters in a group with weight_decay=0.
Source: https://github.com/Lightning-AI/lit-llama/issues/254
"""

import torch

torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(16, 32),
    torch.nn.LayerNorm(32),
    torch.nn.GELU(),
    torch.nn.Linear(32, 4),
)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)  # BUG-LINE
loss_fn = torch.nn.CrossEntropyLoss()

for _step in range(8):
    x = torch.randn(32, 16)
    y = torch.randint(0, 4, (32,))
    loss = loss_fn(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f}")
