"""Prefix tuning of a frozen tiny GPT-2: only virtual-token key/value prefixes are trained.

Unusual on purpose: after a short pretraining phase the whole language model is frozen and
PEFT prefix tuning adds 6 virtual tokens whose past key/values are prepended in every layer.
The only trainable tensor is the prefix embedding table; the input sequence itself is not
extended (the attention mask is lengthened internally), and the LM weights must be identical
before and after prefix training.

Source: https://github.com/huggingface/peft/issues/1638
"""

import copy

import torch
from peft import PrefixTuningConfig, get_peft_model
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

V, T = 40, 14
lm = GPT2LMHeadModel(
    GPT2Config(vocab_size=V, n_positions=32, n_embd=32, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0)
)


def batch(step, bs=16):
    start = torch.randint(0, V, (bs, 1))
    return (start + step * torch.arange(T)) % V


opt = torch.optim.AdamW(lm.parameters(), lr=3e-3)
for it in range(60):
    ids = batch(torch.randint(1, 6, (16, 1)))
    loss = lm(input_ids=ids, labels=ids).loss
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"pretrain loss {loss.item():.4f}")

snapshot = copy.deepcopy(lm.state_dict())
model = get_peft_model(lm, PrefixTuningConfig(task_type="CAUSAL_LM", num_virtual_tokens=6))
model.print_trainable_parameters()
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
model.train()
for it in range(60):
    ids = batch(5)
    out = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=ids)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if it % 15 == 0:
        print(f"prefix step {it} loss {out.loss.item():.4f}")

for k, v in model.base_model.state_dict().items():
    assert torch.equal(v, snapshot[k]), k
print("base LM weights unchanged")
