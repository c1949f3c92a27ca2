"""Tiny Llama-style LM trained on packed sequences with per-document position ids and a
block-diagonal causal mask.

Unusual on purpose: several short documents are concatenated into one row without padding.
position_ids restart at 0 at every document boundary, a 4-D boolean mask lets each token see
only earlier tokens of its own document, and the first label of every document is -100 so
no token is trained to predict across a boundary. The final check shows that a packed
document's logits equal the logits of the same document run alone.

Source: https://huggingface.co/blog/packing-with-FA2
"""

import torch
from transformers import LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
torch.set_num_threads(2)

V, L = 48, 32
cfg = LlamaConfig(
    vocab_size=V,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=2,
    max_position_embeddings=L,
    bos_token_id=0,
    eos_token_id=0,
    pad_token_id=0,
)
model = LlamaForCausalLM(cfg)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)


def pack_row():
    ids, pos, doc, labels = [], [], [], []
    d = 0
    while len(ids) < L:
        n = min(int(torch.randint(4, 11, (1,))), L - len(ids))
        start = int(torch.randint(0, V, (1,)))
        step = int(torch.randint(1, 4, (1,)))
        toks = [(start + step * k) % V for k in range(n)]
        ids += toks
        pos += list(range(n))
        doc += [d] * n
        labels += [-100] + toks[1:]
        d += 1
    return torch.tensor(ids), torch.tensor(pos), torch.tensor(doc), torch.tensor(labels)


def collate(bs=8):
    rows = [pack_row() for _ in range(bs)]
    ids, pos, doc, lab = (torch.stack(x) for x in zip(*rows))
    causal = torch.tril(torch.ones(L, L, dtype=torch.bool))
    mask = (doc[:, :, None] == doc[:, None, :]) & causal
    return ids, pos, mask[:, None], lab


model.train()
for it in range(80):
    ids, pos, mask, labels = collate()
    out = model(input_ids=ids, position_ids=pos, attention_mask=mask, labels=labels)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if it % 20 == 0:
        print(f"step {it} loss {out.loss.item():.4f}")

model.eval()
with torch.no_grad():
    ids, pos, mask, labels = collate(1)
    second = (pos[0] == 0).nonzero().flatten()[1:3]
    a, b = int(second[0]), int(second[1]) if len(second) > 1 else L
    packed = model(input_ids=ids, position_ids=pos, attention_mask=mask).logits[0, a:b]
    alone = model(input_ids=ids[:, a:b]).logits[0]
    print(f"packed vs standalone document max diff {(packed - alone).abs().max().item():.2e}")
