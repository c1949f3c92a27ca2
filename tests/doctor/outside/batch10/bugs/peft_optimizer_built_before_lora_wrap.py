"""LoRA-tunes a tiny GPT-2 language model (built from a config) on a synthetic recipe-step corpus
with a hand-written loop. The optimizer is constructed from the trainable parameters *before*
get_peft_model is called. get_peft_model then freezes all of those base parameters and injects
new lora_A/lora_B parameters that the optimizer has never seen. backward() fills the LoRA
gradients, optimizer.step() skips the frozen base parameters (their .grad is None), and nothing
is ever updated: the loss only fluctuates with the batches. No error, no warning.

Source: https://github.com/karpathy/llama2.c/pull/187
"""

import torch
from peft import LoraConfig, TaskType, get_peft_model
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
V, T, B = 24, 16, 16
cfg = GPT2Config(vocab_size=V, n_positions=T, n_embd=64, n_layer=2, n_head=4, bos_token_id=0, eos_token_id=0)
model = GPT2LMHeadModel(cfg)
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-3)  # BUG-LINE
model = get_peft_model(
    model,
    LoraConfig(task_type=TaskType.CAUSAL_LM, r=8, lora_alpha=16, target_modules=["c_attn", "c_fc"], lora_dropout=0.0),
)

steps = torch.tensor([3, 7, 11, 5, 9, 2, 14, 6])


def batch(n):
    start = torch.randint(0, V, (n, 1))
    stride = steps[torch.randint(0, len(steps), (n, 1))]
    return (start + stride * torch.arange(T)) % V


model.train()
for step in range(40):
    ids = batch(B)
    out = model(input_ids=ids, labels=ids)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step} loss {out.loss.item():.4f}")
print(f"final loss {out.loss.item():.4f}")
