"""Pre-train a tiny GPT-2 inside a training wrapper, save a checkpoint, then fine-tune from it.

Stage 1 trains a `PretrainModule` that holds the LM as `self.lm` and saves the wrapper's
state_dict, so every key starts with "lm.". Stage 2 builds a bare GPT2LMHeadModel and loads
that checkpoint with load_state_dict(..., strict=False) "because the heads differ". No key
matches, nothing is loaded, and strict=False hides it: the fine-tune silently starts from
random weights (the returned missing/unexpected key lists are ignored).

Source: https://github.com/stefanopini/simple-HRNet/issues/79
"""

import os
import tempfile

import torch
import torch.nn as nn
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

VOCAB = 32


def lm_config():
    return GPT2Config(vocab_size=VOCAB, n_positions=24, n_embd=48, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0)


class PretrainModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.lm = GPT2LMHeadModel(lm_config())

    def forward(self, ids):
        return self.lm(input_ids=ids, labels=ids).loss


def arithmetic_batch(g, n=16, T=16, max_step=4):
    start = torch.randint(0, VOCAB, (n, 1), generator=g)
    step = torch.randint(1, max_step + 1, (n, 1), generator=g)
    return (start + step * torch.arange(T)) % VOCAB


def train(fn, params, steps, g, tag, **kw):
    opt = torch.optim.AdamW(params, lr=3e-3)
    for s in range(1, steps + 1):
        loss = fn(arithmetic_batch(g, **kw))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if s == 1 or s % 10 == 0:
            print(f"[{tag}] step {s:3d}  loss {loss.item():.4f}")


def main():
    g = torch.Generator().manual_seed(0)
    ckpt = os.path.join(tempfile.mkdtemp(), "pretrain.pt")
    wrapper = PretrainModule().train()
    train(wrapper, wrapper.parameters(), 40, g, "pretrain", max_step=4)
    torch.save(wrapper.state_dict(), ckpt)

    model = GPT2LMHeadModel(lm_config())
    model.load_state_dict(torch.load(ckpt), strict=False)  # BUG-LINE
    model.train()
    train(lambda ids: model(input_ids=ids, labels=ids).loss, model.parameters(), 30, g, "finetune", max_step=5)


if __name__ == "__main__":
    main()
