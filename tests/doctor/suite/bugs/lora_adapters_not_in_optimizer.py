"""LoRA with peft: the optimizer is built from the base model before get_peft_model adds the adapters, so
it holds only the (now frozen) base weights and the LoRA matrices never train.

doctor-expect: param_not_in_optimizer
"""

import torch
from peft import LoraConfig, get_peft_model
from torch import nn


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 64), nn.Linear(64, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


torch.manual_seed(0)
X, y = torch.randn(512, 16), torch.randint(0, 4, (512,))
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, y), batch_size=32, shuffle=True)
base = MLP()
opt = torch.optim.AdamW(base.parameters(), lr=1e-3)  # bug: built before the adapters exist
model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["fc1", "fc2"]))
for xb, yb in loader:
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
