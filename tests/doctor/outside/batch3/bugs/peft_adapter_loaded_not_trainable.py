"""Training resumes from a saved LoRA adapter loaded with ``PeftModel.from_pretrained(base, path)``: the default
``is_trainable=False`` loads the adapter frozen (inference mode). The script adds a fresh classification head,
builds the optimizer over what requires grad (the head only) and trains: the adapter it meant to keep training
never changes. Nothing warns.

Source: https://github.com/huggingface/peft/issues/282
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


# a first run saved its adapter
adapter_dir = tempfile.mkdtemp()
get_peft_model(Encoder(), LoraConfig(r=4, lora_alpha=8, target_modules=["fc1", "fc2"])).save_pretrained(adapter_dir)
torch.manual_seed(0)
# this run resumes it and trains a new head on top
encoder = PeftModel.from_pretrained(Encoder(), adapter_dir)  # BUG-LINE
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
