"""Continues training a LoRA-adapted tiny GPT-2 reward model. A LoRA adapter from an earlier run is saved to a temp
dir and re-loaded with PeftModel.from_pretrained; a scalar reward head on top of the last hidden state is trained with
a pairwise (Bradley-Terry) preference loss. from_pretrained loads adapters in inference mode by default
(is_trainable=False), so all LoRA parameters have requires_grad=False. The optimizer is built from the parameters that
require grad, which is only the reward head, so backward works, the loss goes down a bit, and nothing warns, but the
adapter that was meant to be fine-tuned never changes.

Source: https://github.com/illuin-tech/colpali/pull/212
"""

import tempfile

import torch
import torch.nn.functional as F
from peft import LoraConfig, PeftModel, get_peft_model
from torch import nn
from transformers import GPT2Config, GPT2Model

torch.manual_seed(0)
V = 50
cfg = GPT2Config(vocab_size=V, n_positions=16, n_embd=64, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0)
base = GPT2Model(cfg)
tmp = tempfile.TemporaryDirectory()
first = get_peft_model(
    base, LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn"], lora_dropout=0.0, fan_in_fan_out=True)
)
first.save_pretrained(tmp.name)
base = first.unload()

model = PeftModel.from_pretrained(base, tmp.name)  # BUG-LINE
head = nn.Linear(64, 1)
params = [p for p in model.parameters() if p.requires_grad] + list(head.parameters())
print("trainable LoRA tensors:", sum(1 for n, p in model.named_parameters() if p.requires_grad and "lora" in n))
opt = torch.optim.AdamW(params, lr=2e-3)
lora_before = {n: p.detach().clone() for n, p in model.named_parameters() if "lora_B" in n}

g = torch.Generator().manual_seed(0)
good = torch.randint(0, 25, (128, 12), generator=g)
bad = torch.randint(25, V, (128, 12), generator=g)
model.train()
for step in range(20):
    i = torch.randint(0, 128, (16,), generator=g)
    r_good = head(model(input_ids=good[i]).last_hidden_state[:, -1]).squeeze(-1)
    r_bad = head(model(input_ids=bad[i]).last_hidden_state[:, -1]).squeeze(-1)
    loss = -F.logsigmoid(r_good - r_bad).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 0:
        print(step, round(loss.item(), 4))
print(
    "max change in LoRA B:",
    max(float((p - lora_before[n]).abs().max()) for n, p in model.named_parameters() if n in lora_before),
)
tmp.cleanup()
