"""Mixed precision on CPU: bfloat16 autocast around the forward pass, fp32 weights.

Parameters and optimizer state stay in float32; only the ops inside
torch.autocast("cpu", dtype=torch.bfloat16) run in bf16, and the loss is
computed in fp32.  bfloat16 has the fp32 exponent range, so no GradScaler is
needed on CPU.
Source: https://discuss.pytorch.org/t/amp-on-cpu-no-gradscaler-necessary-available/191857
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x, y = torch.randn(128, 32), torch.randint(0, 4, (128,))

for _step in range(8):
    opt.zero_grad()
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        logits = model(x)
    loss = nn.functional.cross_entropy(logits.float(), y)
    loss.backward()
    opt.step()
print(f"loss {loss.item():.4f} logits dtype {logits.dtype} weight dtype {model[0].weight.dtype}")
