"""LoRA on a custom residual MLP whose blocks are wrapped in reentrant activation checkpointing.

The backbone (embedding + residual blocks) is frozen and LoRA adapters are injected into the
block Linear layers with peft; a small head is trained fully via modules_to_save. To save
memory each block is run through torch.utils.checkpoint with use_reentrant=True. The tensor that
enters the first checkpointed block comes from the frozen embedding and does not require grad;
the reentrant implementation then returns an output that is detached from the block's
parameters ("None of the inputs have requires_grad=True" warning), so none of the LoRA adapters
inside the blocks ever receive a gradient. Only the head learns; lora_B stays exactly zero.

Source: https://github.com/locuslab/open-unlearning/issues/178
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
            h = checkpoint(blk, h, use_reentrant=True)  # BUG-LINE
        return self.head(h)


net = Net()
model = get_peft_model(net, LoraConfig(r=8, lora_alpha=16, target_modules=["fc1", "fc2"], modules_to_save=["head"]))
model.print_trainable_parameters()

# target depends on a non-linear interaction of two tokens -> needs the blocks to adapt
g = torch.Generator().manual_seed(1)
table = torch.randint(0, C, (V, V), generator=g)


def batch(n):
    ids = torch.randint(0, V, (n, 4))
    return ids, table[ids[:, 0], ids[:, 1]]


opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=3e-3)
model.train()
for step in range(200):
    ids, y = batch(128)
    loss = F.cross_entropy(model(ids), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 40 == 0:
        print(f"step {step:3d} loss {loss.item():.4f}")

lb = [p.abs().sum().item() for n, p in model.named_parameters() if "lora_B" in n]
print(f"sum |lora_B| over adapters: {sum(lb):.6f}")
