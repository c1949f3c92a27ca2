"""Clean: LoRA with peft on a small MLP, the optimizer built from the peft model's trainable parameters."""

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
model = get_peft_model(MLP(), LoraConfig(r=4, lora_alpha=8, target_modules=["fc1", "fc2"]))
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
for xb, yb in loader:
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
