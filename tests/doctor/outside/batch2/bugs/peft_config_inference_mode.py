"""LoRA (peft) on a custom classifier with ``inference_mode=True`` left in the LoraConfig (copied from a
loading snippet): the adapter matrices are created frozen; the user unfreezes the new head by hand, so the loss
still falls a little while the adapters never train.

Source: https://github.com/huggingface/peft/issues/472
"""

import torch
import torch.nn.functional as F
from peft import LoraConfig, get_peft_model
from torch import nn

torch.manual_seed(0)


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(20, 64), nn.GELU(), nn.Linear(64, 64), nn.GELU())
        self.head = nn.Linear(64, 3)

    def forward(self, x):
        return self.head(self.encoder(x))


config = LoraConfig(r=8, lora_alpha=16, target_modules=["encoder.0", "encoder.2"], inference_mode=True)  # BUG-LINE
model = get_peft_model(Classifier(), config)
for p in model.base_model.model.head.parameters():
    p.requires_grad_(True)  # the new head trains in full
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
X, y = torch.randn(256, 20), torch.randint(0, 3, (256,))
for start in range(0, 256, 32):
    loss = F.cross_entropy(model(X[start : start + 32]), y[start : start + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()
