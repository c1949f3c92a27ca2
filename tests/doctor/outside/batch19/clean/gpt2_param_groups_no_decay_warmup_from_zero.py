"""Tiny GPT-2 LM trained with AdamW parameter groups and a linear warmup that starts at lr = 0.

Unusual but correct: biases, LayerNorm weights and the (tied) embedding get weight_decay=0
while matrices get 0.1, and get_linear_schedule_with_warmup is sized in optimizer steps
(epochs * batches per epoch). The very first update therefore uses lr = 0 on purpose (the
warmup starts from zero, as discussed in the source), then ramps up and decays linearly.

Source: https://github.com/huggingface/transformers/issues/34754
"""

import torch
from torch.utils.data import DataLoader, TensorDataset
from transformers import GPT2Config, GPT2LMHeadModel, get_linear_schedule_with_warmup

torch.manual_seed(0)
torch.set_num_threads(2)

HP = {"epochs": 3, "batch": 16, "lr": 3e-3, "warmup_frac": 0.1, "wd": 0.1}
VOCAB = 32


def corpus(n=224, T=14, seed=0):
    g = torch.Generator().manual_seed(seed)
    start = torch.randint(0, VOCAB, (n, 1), generator=g)
    step = torch.randint(1, 4, (n, 1), generator=g)
    return TensorDataset((start + step * torch.arange(T)) % VOCAB)


def param_groups(model, wd):
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        if p.ndim < 2 or "ln_" in name or "wte" in name or "wpe" in name:
            no_decay.append(p)
        else:
            decay.append(p)
    return [{"params": decay, "weight_decay": wd}, {"params": no_decay, "weight_decay": 0.0}]


def main():
    g = torch.Generator().manual_seed(0)
    dl = DataLoader(corpus(), batch_size=HP["batch"], shuffle=True, generator=g)
    model = GPT2LMHeadModel(
        GPT2Config(vocab_size=VOCAB, n_positions=16, n_embd=48, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0)
    )
    opt = torch.optim.AdamW(param_groups(model, HP["wd"]), lr=HP["lr"])
    total = HP["epochs"] * len(dl)
    sched = get_linear_schedule_with_warmup(opt, int(HP["warmup_frac"] * total), total)
    step = 0
    for epoch in range(HP["epochs"]):
        model.train()
        for (ids,) in dl:
            loss = model(input_ids=ids, labels=ids).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            if step % 7 == 0:
                print(f"epoch {epoch} step {step:3d}  loss {loss.item():.4f}  lr {sched.get_last_lr()[0]:.2e}")


if __name__ == "__main__":
    main()
