"""Continue training a saved LoRA adapter on a second task with a fresh task head.

Stage 1 trains a LoRA adapter on a tiny GPT-2 backbone together with a linear head and saves
the adapter. Stage 2 reloads the adapter with `PeftModel.from_pretrained(base, path)` and
trains it further on a new task with a new linear head, building the optimizer from all
parameters that require grad. `from_pretrained` defaults to `is_trainable=False`, so the
LoRA weights come back frozen: only the new head is optimized, the loss still decreases a
little, and the adapter silently never changes in stage 2.

Source: https://github.com/huggingface/peft/pull/591
"""

import itertools
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import GPT2Config, GPT2Model

torch.manual_seed(0)
torch.set_num_threads(2)

V, T = 40, 12
cfg = GPT2Config(vocab_size=V, n_positions=T, n_embd=32, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0)


def batch(task, bs=32):
    ids = torch.randint(1, V, (bs, T))
    if task == 0:
        y = (ids[:, -1] < V // 2).long()
    else:
        y = (ids[:, : T // 2] == 7).any(1).long()
    return ids, y


def train(backbone, head, task, steps):
    params = [p for p in itertools.chain(backbone.parameters(), head.parameters()) if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=3e-3)
    for it in range(steps):
        ids, y = batch(task)
        h = backbone(input_ids=ids).last_hidden_state[:, -1]
        loss = F.cross_entropy(head(h), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if it % 20 == 0:
            print(f"task {task} step {it} loss {loss.item():.4f}")


torch.manual_seed(0)
lcfg = LoraConfig(r=8, lora_alpha=16, target_modules=["c_attn", "c_fc"], fan_in_fan_out=True)
model = get_peft_model(GPT2Model(cfg), lcfg)
train(model, nn.Linear(32, 2), 0, 40)
path = tempfile.mkdtemp()
model.save_pretrained(path)

torch.manual_seed(0)
model2 = PeftModel.from_pretrained(GPT2Model(cfg), path)  # BUG-LINE
model2.train()
before = {n: p.detach().clone() for n, p in model2.named_parameters() if "lora_" in n}
train(model2, nn.Linear(32, 2), 1, 60)
delta = max((p.detach() - before[n]).abs().max().item() for n, p in model2.named_parameters() if n in before)
print(f"max LoRA weight change during stage 2: {delta:.6f}")
