"""Prompt tuning of a frozen tiny GPT-2 with peft: only 8 virtual prompt-token embeddings are trained (the whole base
model is deliberately frozen) on a synthetic "continue the arithmetic sequence" task, with a learning rate of 0.3 as
recommended for prompt tuning (soft prompts need learning rates orders of magnitude larger than full fine-tuning).
peft prepends the virtual tokens and extends the attention mask and labels (-100 for virtual positions) itself.

Source: https://arxiv.org/abs/2104.08691
"""

import torch
from peft import PromptTuningConfig, TaskType, get_peft_model
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
V = 40
base = GPT2LMHeadModel(
    GPT2Config(vocab_size=V, n_positions=32, n_embd=64, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0)
)
model = get_peft_model(base, PromptTuningConfig(task_type=TaskType.CAUSAL_LM, num_virtual_tokens=8))
print("trainable:", sum(p.numel() for p in model.parameters() if p.requires_grad))
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=0.3, weight_decay=1e-5)
g = torch.Generator().manual_seed(0)
model.train()
for step in range(30):
    s = torch.randint(0, V, (16, 1), generator=g)
    ids = (s + 2 * torch.arange(12)) % V
    out = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=ids)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if step % 10 == 0:
        print(step, round(out.loss.item(), 4))
