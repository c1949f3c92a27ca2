"""Training resumes from a saved LoRA adapter loaded with ``PeftModel.from_pretrained(..., is_trainable=True)``:
the adapter's parameters require grad and go into the optimizer with a new head. Correct: the twin of loading
with the default (frozen) mode.

Source: https://github.com/ymcui/Chinese-LLaMA-Alpaca-2/pull/577
"""

import tempfile

import torch
import torch.nn.functional as F
from peft import LoraConfig, PeftModel, get_peft_model
from torch import nn

torch.manual_seed(0)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 64)
        self.fc2 = nn.Linear(64, 32)

    def forward(self, x):
        return F.relu(self.fc2(F.relu(self.fc1(x))))


adapter_dir = tempfile.mkdtemp()
get_peft_model(Encoder(), LoraConfig(r=4, lora_alpha=8, target_modules=["fc1", "fc2"])).save_pretrained(adapter_dir)
torch.manual_seed(0)
encoder = PeftModel.from_pretrained(Encoder(), adapter_dir, is_trainable=True)
head = nn.Linear(32, 3)
params = [p for p in [*encoder.parameters(), *head.parameters()] if p.requires_grad]
opt = torch.optim.AdamW(params, lr=1e-3)
encoder.train()
X, y = torch.randn(192, 16), torch.randint(0, 3, (192,))
for i in range(0, 192, 32):
    loss = F.cross_entropy(head(encoder(X[i : i + 32])), y[i : i + 32])
    opt.zero_grad()
    loss.backward()
    opt.step()
