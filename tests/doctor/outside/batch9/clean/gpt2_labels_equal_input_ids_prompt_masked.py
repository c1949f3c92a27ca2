"""GPT-2 fine-tuning in a plain loop passing labels = input_ids (shift happens inside the model).

Unusual: labels are not shifted by the user at all, the prompt part and right-padding are set to
-100, and padding uses a dedicated pad id; the model shifts logits/labels internally.
Source: https://github.com/huggingface/transformers/issues/2033
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
PAD = 0
model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=40, n_positions=32))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for _step in range(8):
    ids = torch.randint(1, 40, (4, 14))
    lens = torch.tensor([14, 12, 10, 9])
    attn = (torch.arange(14)[None] < lens[:, None]).long()
    ids = ids.masked_fill(attn == 0, PAD)
    labels = ids.clone()
    labels[:, :5] = -100
    labels[attn == 0] = -100
    out = model(input_ids=ids, attention_mask=attn, labels=labels)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
print(f"loss {out.loss.item():.4f}")
