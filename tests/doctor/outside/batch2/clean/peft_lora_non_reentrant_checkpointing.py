"""LoRA (peft) on a custom encoder whose blocks run under non-reentrant activation checkpointing with the
embedding frozen: the non-reentrant form needs no input that requires grad, so the blocks' adapters get their
gradients.

Source: https://github.com/huggingface/transformers/issues/26221
"""

import torch
import torch.nn.functional as F
from peft import LoraConfig, get_peft_model
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 32)
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32)) for _ in range(2))
        self.head = nn.Linear(32, 2)

    def forward(self, ids):
        h = self.emb(ids)  # (B, T, 32)
        for block in self.blocks:
            h = h + checkpoint(block, h, use_reentrant=False)
        return self.head(h.mean(1))


targets = [f"blocks.{i}.{j}" for i in (0, 1) for j in (0, 2)]
config = LoraConfig(r=4, lora_alpha=8, target_modules=targets, modules_to_save=["head"])
model = get_peft_model(Encoder(), config)
model.train()
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
ids, y = torch.randint(0, 50, (128, 10)), torch.randint(0, 2, (128,))
for start in range(0, 128, 16):
    loss = F.cross_entropy(model(ids[start : start + 16]), y[start : start + 16])
    opt.zero_grad()
    loss.backward()
    opt.step()
