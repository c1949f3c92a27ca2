"""Teach a (pre-trained) tiny GPT-2 a few new tokens (reserved, unused vocabulary rows), training only those rows.

Everything except the (tied) token-embedding matrix is frozen, and a gradient hook zeroes
the gradient rows of the original vocabulary so that only the added rows learn. The
optimizer is AdamW with the weight decay of the usual SFT config. Decoupled weight decay
shrinks every parameter row on each step regardless of its gradient, so the "frozen"
original embeddings (and the tied output layer) still drift toward zero during the run,
the effect reported when comparing raw-token rows across checkpoints.

Source: https://github.com/baichuan-inc/Baichuan2/issues/383
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

OLD_VOCAB, N_NEW = 32, 4
OPT_CFG = {"lr": 2e-2, "weight_decay": 0.1, "betas": (0.9, 0.999)}


def pretrain_batch(g, n=16, T=12):
    start = torch.randint(0, OLD_VOCAB, (n, 1), generator=g)
    return (start + torch.arange(T)) % OLD_VOCAB


def new_token_batch(g, n=16, T=12):
    """A new token k acts as an instruction 'count with stride k+2'."""
    k = torch.randint(0, N_NEW, (n, 1), generator=g)
    start = torch.randint(0, OLD_VOCAB, (n, 1), generator=g)
    body = (start + (k + 2) * torch.arange(T - 1)) % OLD_VOCAB
    return torch.cat([OLD_VOCAB + k, body], dim=1)


def main():
    g = torch.Generator().manual_seed(0)
    cfg = GPT2Config(
        vocab_size=OLD_VOCAB + N_NEW, n_positions=16, n_embd=48, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0
    )
    model = GPT2LMHeadModel(cfg)
    pre_opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(25):  # quick "pre-training"
        ids = pretrain_batch(g)
        loss = model(input_ids=ids, labels=ids).loss
        pre_opt.zero_grad()
        loss.backward()
        pre_opt.step()
    print(f"pre-trained loss {loss.item():.4f}")

    for p in model.parameters():
        p.requires_grad_(False)
    emb = model.get_input_embeddings().weight
    emb.requires_grad_(True)
    row_mask = torch.zeros(emb.shape[0], 1)
    row_mask[OLD_VOCAB:] = 1.0
    emb.register_hook(lambda grad: grad * row_mask)

    opt = torch.optim.AdamW([emb], **OPT_CFG)  # BUG-LINE
    model.train()
    for step in range(1, 41):
        ids = new_token_batch(g)
        loss = model(input_ids=ids, labels=ids).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"step {step:3d}  loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
