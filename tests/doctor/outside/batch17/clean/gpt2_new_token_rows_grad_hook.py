"""Teaching a frozen tiny GPT-2 four new tokens by training only their embedding rows.

Modelled on the question of how to train only newly added token embeddings after
resize_token_embeddings: a tensor hook on the (tied) embedding matrix zeroes the
gradient rows of the original vocabulary, every other parameter is frozen, and
AdamW runs with weight_decay=0 so the zero-gradient rows really stay put. Unusual
but intended: a hook that rewrites gradients, a parameter that is only partly
trainable, input and output embeddings tied, and a check that the old rows are
bit-identical after training.

Source: https://github.com/huggingface/transformers/issues/29897
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

OLD_V, NEW, T = 24, 4, 12
perm = torch.randperm(OLD_V)


def old_corpus(n):
    s = torch.empty(n, T, dtype=torch.long)
    s[:, 0] = torch.randint(0, OLD_V, (n,))
    for t in range(1, T):
        s[:, t] = perm[s[:, t - 1]]
    return s


cfg = GPT2Config(vocab_size=OLD_V, n_positions=T, n_embd=64, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
for step in range(40):
    x = old_corpus(32)
    loss = model(input_ids=x, labels=x).loss
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"base LM loss {loss.item():.4f}")

# reload the "pretrained" checkpoint into a fresh model, then extend the vocabulary
state = {k: v.detach().clone() for k, v in model.state_dict().items()}
model = GPT2LMHeadModel(cfg)
model.load_state_dict(state)
model.resize_token_embeddings(OLD_V + NEW, mean_resizing=False)
emb = model.get_input_embeddings().weight
assert model.get_output_embeddings().weight is emb
model.requires_grad_(False)
emb.requires_grad_(True)
row_mask = torch.zeros(OLD_V + NEW, 1)
row_mask[OLD_V:] = 1.0
emb.register_hook(lambda g: g * row_mask)
old_rows = emb[:OLD_V].detach().clone()


def new_corpus(n):
    # each new token k is always followed by old token perm-chain starting at k*5
    x = old_corpus(n)
    k = torch.randint(0, NEW, (n,))
    x[:, 0] = OLD_V + k
    x[:, 1] = k * 5
    for t in range(2, T):
        x[:, t] = perm[x[:, t - 1]]
    return x


opt = torch.optim.AdamW([emb], lr=1e-2, weight_decay=0.0)
for step in range(60):
    x = new_corpus(32)
    loss = model(input_ids=x, labels=x).loss
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step:3d} loss {loss.item():.4f}")
print(f"final loss {loss.item():.4f}; old rows unchanged: {torch.equal(emb[:OLD_V], old_rows)}")
