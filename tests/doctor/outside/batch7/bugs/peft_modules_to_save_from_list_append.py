"""The LoRA config passes modules_to_save=target_modules.append("score"). list.append
returns None, so modules_to_save is None, while "score" is silently added to the
LoRA target modules. The freshly initialised classification head is therefore not
fully trained (only a low-rank update on top of its random, frozen weight) and is
not saved as a full module.

Source: https://github.com/huggingface/peft/issues/577
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
        h = torch.relu(self.q(x)) + torch.relu(self.v(x))
        return self.score(h)


torch.manual_seed(0)
base = TinyClassifier()
for p in base.parameters():
    p.requires_grad_(False)
target_modules = ["q", "v"]
cfg = LoraConfig(
    r=4,
    lora_alpha=8,
    target_modules=target_modules,
    modules_to_save=target_modules.append("score"),  # BUG-LINE
)
model = get_peft_model(base, cfg)
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
x = torch.randn(64, 16)
y = x[:, :3].argmax(1)
for _step in range(6):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
print("loss", loss.item())
