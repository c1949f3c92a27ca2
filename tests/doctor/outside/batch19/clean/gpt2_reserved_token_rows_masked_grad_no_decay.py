"""Train only the embedding rows of a few new tokens of a (pre-trained) tiny GPT-2.

Unusual but correct: all parameters are frozen except the tied embedding matrix; a
gradient hook zeroes the gradient of the original rows, and the optimizer for that matrix
uses weight_decay=0.0 (plain Adam), so the original rows (and the tied output layer) stay
bit-identical while the new rows learn. The frozen rows are checked after training.

Source: https://github.com/huggingface/transformers/issues/35022
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

OLD_VOCAB, N_NEW = 32, 4


def pretrain_batch(g, n=16, T=12):
    start = torch.randint(0, OLD_VOCAB, (n, 1), generator=g)
    return (start + torch.arange(T)) % OLD_VOCAB


def new_token_batch(g, n=16, T=12):
    k = torch.randint(0, N_NEW, (n, 1), generator=g)
    start = torch.randint(0, OLD_VOCAB, (n, 1), generator=g)
    body = (start + (k + 2) * torch.arange(T - 1)) % OLD_VOCAB
    return torch.cat([OLD_VOCAB + k, body], dim=1)


def main():
    g = torch.Generator().manual_seed(0)
    model = GPT2LMHeadModel(
        GPT2Config(
            vocab_size=OLD_VOCAB + N_NEW, n_positions=16, n_embd=48, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0
        )
    )
    pre = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(25):
        ids = pretrain_batch(g)
        loss = model(input_ids=ids, labels=ids).loss
        pre.zero_grad()
        loss.backward()
        pre.step()
    print(f"pre-trained loss {loss.item():.4f}")

    for p in model.parameters():
        p.requires_grad_(False)
    emb = model.get_input_embeddings().weight
    emb.requires_grad_(True)
    keep = torch.zeros(emb.shape[0], 1)
    keep[OLD_VOCAB:] = 1.0
    emb.register_hook(lambda grad: grad * keep)
    old_rows = emb.detach()[:OLD_VOCAB].clone()

    opt = torch.optim.Adam([emb], lr=2e-2, weight_decay=0.0)
    model.train()
    for step in range(1, 41):
        ids = new_token_batch(g)
        loss = model(input_ids=ids, labels=ids).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"step {step:3d}  loss {loss.item():.4f}")
    print("original rows unchanged:", torch.equal(old_rows, emb.detach()[:OLD_VOCAB]))


if __name__ == "__main__":
    main()
