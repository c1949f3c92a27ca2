"""LoRA (peft) on a custom residual network with activation checkpointing that keeps gradients.

Unusual but correct: the embedding and base block weights are frozen and LoRA adapters are
injected into the block Linear layers; the head is trained fully through modules_to_save.
Every block runs under torch.utils.checkpoint with use_reentrant=False. The non-reentrant
implementation records the block's parameters in the graph even though the incoming
activation comes from a frozen embedding and does not require grad, so the LoRA adapters inside
the checkpointed blocks receive gradients (lora_B moves away from zero) while activations are
recomputed in backward.

Source: https://github.com/huggingface/peft/issues/1142
"""

import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from peft import LoraConfig, get_peft_model
from torch.utils.checkpoint import checkpoint

warnings.filterwarnings("ignore")
torch.manual_seed(0)
torch.set_num_threads(2)

V, D, C = 64, 64, 8


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(D, 2 * D)
        self.fc2 = nn.Linear(2 * D, D)
        self.norm = nn.LayerNorm(D)

    def forward(self, h):
        return h + self.fc2(F.gelu(self.fc1(self.norm(h))))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(V, D)
        self.blocks = nn.ModuleList([Block() for _ in range(3)])
        self.head = nn.Linear(D, C)

    def forward(self, ids):
        h = self.embed(ids).mean(1)
        for blk in self.blocks:
            h = checkpoint(blk, h, use_reentrant=False)
        return self.head(h)


model = get_peft_model(Net(), LoraConfig(r=8, lora_alpha=16, target_modules=["fc1", "fc2"], modules_to_save=["head"]))
model.print_trainable_parameters()

g = torch.Generator().manual_seed(1)
table = torch.randint(0, C, (V,), generator=g)


def batch(n):
    ids = torch.randint(0, V, (n, 4))
    return ids, table[ids[:, 0]]


opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=3e-3)
model.train()
for step in range(100):
    ids, y = batch(64)
    loss = F.cross_entropy(model(ids), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 20 == 0:
        print(f"step {step:3d} loss {loss.item():.4f}")

lb = [p.abs().sum().item() for n, p in model.named_parameters() if "lora_B" in n]
print(f"sum |lora_B| over adapters: {sum(lb):.4f}")
