"""LoRA with peft on a custom model, the new head listed in modules_to_save so it trains; the frozen base
weights stay out of the optimizer (only trainable parameters are given to it).

Source: https://github.com/huggingface/peft/issues/1894
"""

import torch
import torch.nn.functional as F
from peft import LoraConfig, get_peft_model
from torch import nn

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.new_head = nn.Linear(32, 5)

    def forward(self, x):
        return self.new_head(torch.relu(self.fc1(x)))


model = get_peft_model(Net(), LoraConfig(r=4, lora_alpha=8, target_modules=["fc1"], modules_to_save=["new_head"]))
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
X, y = torch.randn(32, 16), torch.randint(0, 5, (32,))
for _step in range(3):
    opt.zero_grad()
    loss = F.cross_entropy(model(X), y)
    loss.backward()
    opt.step()
