"""LoRA fine-tuning with peft where the base layers are frozen and only the
low-rank adapters train, while the freshly initialised classification head is
listed in modules_to_save so it is fully trainable and saved. Most parameters
having requires_grad=False is intended.

Source: https://huggingface.co/docs/peft/package_reference/lora
"""

import torch
from peft import LoraConfig, get_peft_model
from torch import nn


class TinyClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(16, 16)
        self.v = nn.Linear(16, 16)
        self.score = nn.Linear(16, 3)

    def forward(self, x):
        return self.score(torch.relu(self.q(x)) + torch.relu(self.v(x)))


torch.manual_seed(0)
cfg = LoraConfig(r=4, lora_alpha=8, target_modules=["q", "v"], modules_to_save=["score"])
model = get_peft_model(TinyClassifier(), cfg)
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
x = torch.randn(64, 16)
y = x[:, :3].argmax(1)
for _step in range(6):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
print("loss", loss.item())
