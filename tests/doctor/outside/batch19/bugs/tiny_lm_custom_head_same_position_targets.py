"""Causal LM built as GPT2Model backbone + a separate LM head module, trained in a plain loop.

The LM head module computes its own cross-entropy. It compares the logits at position t with
the label at the same position t instead of the label at t+1 (no shift). With a causal
backbone the token at position t is visible to position t, so the model learns to copy its
own input: the loss drops to almost zero very fast and looks great, while the model has not
learned next-token prediction at all (the BartForCausalLM-style unshifted loss reported in
the source).

Source: https://github.com/macrocosm-os/pretraining/pull/64
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
from transformers import GPT2Config, GPT2Model

torch.manual_seed(0)
torch.set_num_threads(2)

CFG = dict(vocab=32, d_model=64, layers=2, heads=4, max_len=32, lr=2e-3, steps=60, batch=16)


class LMHead(nn.Module):
    def __init__(self, d_model, vocab):
        super().__init__()
        self.norm = nn.LayerNorm(d_model)
        self.proj = nn.Linear(d_model, vocab, bias=False)

    def forward(self, hidden, labels=None):
        logits = self.proj(self.norm(hidden))
        loss = None
        if labels is not None:
            # fmt: off
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1),  # BUG-LINE
                                   ignore_index=-100)
            # fmt: on
        return logits, loss


class TinyCausalLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        gcfg = GPT2Config(
            vocab_size=cfg["vocab"],
            n_positions=cfg["max_len"],
            n_embd=cfg["d_model"],
            n_layer=cfg["layers"],
            n_head=cfg["heads"],
            bos_token_id=0,
            eos_token_id=0,
        )
        self.backbone = GPT2Model(gcfg)
        self.head = LMHead(cfg["d_model"], cfg["vocab"])

    def forward(self, input_ids, attention_mask=None, labels=None):
        h = self.backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return self.head(h, labels)


def sample_batch(cfg, g):
    B, T, V = cfg["batch"], 16, cfg["vocab"]
    start = torch.randint(0, V, (B, 1), generator=g)
    step = torch.randint(1, 5, (B, 1), generator=g)
    ids = (start + step * torch.arange(T)) % V
    return ids


def main():
    g = torch.Generator().manual_seed(0)
    model = TinyCausalLM(CFG)
    opt = torch.optim.AdamW(model.parameters(), lr=CFG["lr"], weight_decay=0.01)
    model.train()
    for step in range(1, CFG["steps"] + 1):
        ids = sample_batch(CFG, g)
        _, loss = model(ids, attention_mask=torch.ones_like(ids), labels=ids.clone())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 10 == 0:
            print(f"step {step:3d}  loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
