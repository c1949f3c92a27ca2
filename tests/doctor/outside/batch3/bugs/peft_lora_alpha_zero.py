"""A LoRA config read from a settings file comes through with ``lora_alpha=0``: the adapter's scaling alpha / r
is 0, so its output is multiplied by zero and neither lora_A nor lora_B ever gets a nonzero gradient. The
classifier head (in ``modules_to_save``) still learns, so the loss falls and the adapters do nothing.

Source: https://github.com/invergent-ai/surogate/issues/173
"""

import torch
import torch.nn.functional as F
from peft import LoraConfig, get_peft_model
from torch import nn

torch.manual_seed(0)
settings = {"r": 8, "lora_alpha": 0, "targets": ["body.0", "body.2"]}  # alpha left empty in the file -> 0


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(12, 48), nn.ReLU(), nn.Linear(48, 48), nn.ReLU())
        self.head = nn.Linear(48, 4)

    def forward(self, x):
        return self.head(self.body(x))


config = LoraConfig(
    r=settings["r"],
    lora_alpha=settings["lora_alpha"],  # BUG-LINE
    target_modules=settings["targets"],
    modules_to_save=["head"],
)
model = get_peft_model(Net(), config)
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
X, y = torch.randn(256, 12), torch.randint(0, 4, (256,))
for i in range(0, 256, 32):
    loss = F.cross_entropy(model(X[i : i + 32]), y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()
