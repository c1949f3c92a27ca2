"""Tiny GPT-2 fine-tune with Accelerate gradient accumulation, loss scaled twice.

Source: https://github.com/huggingface/accelerate/issues/1773

The training step divides the loss by ``gradient_accumulation_steps`` before
calling ``accelerator.backward``.  Inside ``accelerator.accumulate`` Accelerate
already divides the loss by the same factor, so every gradient is shrunk by
``accum**2`` instead of ``accum``.  With plain SGD this is an 8x smaller
effective learning rate: no error, the loss goes down, just far slower than the
configured schedule intends.
"""

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

TRAIN_CFG = {"accum": 8, "micro_bs": 4, "lr": 0.5, "updates": 20, "seq": 20}


def build_corpus(n, seq, vocab, seed=0):
    g = torch.Generator().manual_seed(seed)
    start = torch.randint(0, vocab, (n, 1), generator=g)
    stride = torch.randint(1, 3, (n, 1), generator=g)
    return (start + stride * torch.arange(seq)) % vocab


def train_step(accelerator, model, batch, optimizer, cfg):
    with accelerator.accumulate(model):
        out = model(input_ids=batch, labels=batch)
        loss = out.loss / cfg["accum"]  # BUG-LINE
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
    return out.loss.detach()


def main():
    cfg = TRAIN_CFG
    accelerator = Accelerator(gradient_accumulation_steps=cfg["accum"], cpu=True)
    mcfg = GPT2Config(
        vocab_size=64,
        n_positions=32,
        n_embd=64,
        n_layer=2,
        n_head=4,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=0,
        eos_token_id=0,
    )
    model = GPT2LMHeadModel(mcfg)
    data = build_corpus(cfg["accum"] * cfg["micro_bs"] * cfg["updates"], cfg["seq"], mcfg.vocab_size)
    loader = DataLoader(TensorDataset(data), batch_size=cfg["micro_bs"], shuffle=True)
    optimizer = torch.optim.SGD(model.parameters(), lr=cfg["lr"])
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    model.train()
    running = []
    for i, (batch,) in enumerate(loader):
        running.append(train_step(accelerator, model, batch, optimizer, cfg))
        if accelerator.sync_gradients and (i + 1) % (cfg["accum"] * 4) == 0:
            print(f"update {(i + 1) // cfg['accum']:3d} loss {torch.stack(running).mean():.4f}")
            running = []


if __name__ == "__main__":
    main()
