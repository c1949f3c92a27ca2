"""LoRA on a custom token-mixer LM whose "fast path" reads the projection weight directly.

Source: https://github.com/state-spaces/mamba/issues/279

The block's fast path calls ``F.linear(x, self.in_proj.weight, self.in_proj.bias)``
instead of ``self.in_proj(x)`` (the Mamba fused kernel only takes the weight
tensor).  PEFT wraps ``in_proj`` in a LoRA layer, but the wrapper's ``forward``
is never called, so the ``in_proj`` LoRA matrices never enter the graph: their
``.grad`` stays ``None`` and they are never updated.  Training still runs and the
loss falls a bit through the ``out_proj`` adapters, hiding the problem.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from peft import LoraConfig, get_peft_model

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB, D, T, LAYERS = 48, 64, 24, 2


class MixerBlock(nn.Module):
    def __init__(self, d, use_fast_path=True):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.in_proj = nn.Linear(d, 2 * d)
        self.conv = nn.Conv1d(d, d, kernel_size=4, padding=3, groups=d)
        self.out_proj = nn.Linear(d, d)
        self.use_fast_path = use_fast_path

    def forward(self, x):
        h = self.norm(x)
        if self.use_fast_path:
            xz = F.linear(h, self.in_proj.weight, self.in_proj.bias)  # BUG-LINE
        else:
            xz = self.in_proj(h)
        u, gate = xz.chunk(2, dim=-1)
        u = self.conv(u.transpose(1, 2))[..., : x.size(1)].transpose(1, 2)
        return x + self.out_proj(F.silu(u) * torch.sigmoid(gate))


class TinyMixerLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.blocks = nn.ModuleList([MixerBlock(D) for _ in range(LAYERS)])
        self.norm_f = nn.LayerNorm(D)
        self.lm_head = nn.Linear(D, VOCAB, bias=False)

    def forward(self, ids):
        h = self.embed(ids)
        for blk in self.blocks:
            h = blk(h)
        return self.lm_head(self.norm_f(h))


def sample_sequences(n, gen):
    # deterministic "counting" language: next = (prev + step) % VOCAB
    start = torch.randint(0, VOCAB, (n, 1), generator=gen)
    step = torch.randint(1, 4, (n, 1), generator=gen)
    return (start + step * torch.arange(T)) % VOCAB


def main():
    base = TinyMixerLM()
    # pretend pre-training happened: base weights stay frozen under LoRA
    cfg = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["in_proj", "out_proj"])
    model = get_peft_model(base, cfg)
    model.print_trainable_parameters()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    gen = torch.Generator().manual_seed(0)
    for step in range(120):
        ids = sample_sequences(32, gen)
        logits = model(ids)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, VOCAB), ids[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0 or step == 119:
            print(f"step {step:3d} loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
