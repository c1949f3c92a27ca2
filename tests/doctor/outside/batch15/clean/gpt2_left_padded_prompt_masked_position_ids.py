"""Instruction-style fine-tuning of a tiny GPT-2 with LEFT padding, prompt tokens masked to -100,
and position_ids computed from the attention mask.

Unusual on purpose: (1) the decoder batch is left-padded (as needed for batched generation),
(2) only the response tokens are supervised (prompt and padding labels are -100), and (3)
because GPT-2 uses absolute position embeddings and does not derive positions from the
attention mask in forward, position_ids are passed explicitly as cumsum(mask)-1 so every
real sequence starts at position 0. The check at the end confirms that a left-padded row and
the same row without padding give the same logits.

Source: https://github.com/huggingface/trl/issues/469
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

V, PAD, SEP = 50, 0, 1
model = GPT2LMHeadModel(
    GPT2Config(
        vocab_size=V,
        n_positions=32,
        n_embd=48,
        n_layer=2,
        n_head=4,
        bos_token_id=SEP,
        eos_token_id=SEP,
        pad_token_id=PAD,
    )
)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)


def example():
    p = int(torch.randint(2, 8, (1,)))
    prompt = torch.randint(2, V, (p,))
    response = prompt.flip(0)[:3]
    return torch.cat([prompt, torch.tensor([SEP]), response]), p + 1


def collate(bs=16):
    rows = [example() for _ in range(bs)]
    L = max(len(r) for r, _ in rows)
    ids = torch.full((bs, L), PAD)
    mask = torch.zeros(bs, L, dtype=torch.long)
    labels = torch.full((bs, L), -100)
    for i, (r, n_prompt) in enumerate(rows):
        off = L - len(r)
        ids[i, off:] = r
        mask[i, off:] = 1
        labels[i, off + n_prompt :] = r[n_prompt:]
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    return ids, mask, pos, labels


model.train()
for it in range(90):
    ids, mask, pos, labels = collate()
    out = model(input_ids=ids, attention_mask=mask, position_ids=pos, labels=labels)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if it % 20 == 0:
        print(f"step {it} response-only loss {out.loss.item():.4f}")

model.eval()
with torch.no_grad():
    ids, mask, pos, labels = collate(4)
    full = model(input_ids=ids, attention_mask=mask, position_ids=pos).logits
    keep = mask[0].bool()
    single = model(input_ids=ids[0:1, keep]).logits
    print(f"left-pad vs unpadded max diff {(full[0, keep] - single[0]).abs().max().item():.2e}")
