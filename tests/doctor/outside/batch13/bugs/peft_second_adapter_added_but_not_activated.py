"""Training a second LoRA adapter on a PeftModel that still has the first adapter active.

Task A is learned into the "default" adapter. For task B the script calls
model.add_adapter("task_b", cfg) and keeps training, expecting the new adapter to be trained.
add_adapter only registers the adapter: the active (and trainable) adapter is still "default",
so all task-B updates overwrite the task-A adapter while the task_b adapter stays at its
initialisation (lora_B == 0). The loss on task B goes down, so nothing looks wrong until the
adapters are switched for inference: task A is forgotten and task_b does nothing.

Source: https://github.com/huggingface/peft/issues/1303
"""

import torch
from peft import LoraConfig, get_peft_model
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)
V, L = 24, 10
cfg = GPT2Config(n_layer=2, n_embd=48, n_head=2, vocab_size=V, n_positions=L, bos_token_id=0, eos_token_id=0)
base = GPT2LMHeadModel(cfg)


def batch(stride, n=32):
    start = torch.randint(0, V, (n, 1))
    return (start + stride * torch.arange(L)) % V


def train(model, stride, steps, tag):
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-3)
    model.train()
    for step in range(steps):
        ids = batch(stride)
        loss = model(input_ids=ids, labels=ids).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"[{tag}] step {step:2d} loss {loss.item():.4f}")


@torch.no_grad()
def eval_loss(model, stride):
    model.eval()
    ids = batch(stride, 256)
    return model(input_ids=ids, labels=ids).loss.item()


def cfg_lora():
    return LoraConfig(r=8, lora_alpha=16, target_modules=["c_attn", "c_proj"], task_type="CAUSAL_LM")


model = get_peft_model(base, cfg_lora())
train(model, stride=1, steps=40, tag="task_a")
print(f"task A loss with adapter 'default': {eval_loss(model, 1):.4f}")

model.add_adapter("task_b", cfg_lora())  # BUG-LINE
train(model, stride=5, steps=40, tag="task_b")

model.set_adapter("default")
print(f"task A loss with adapter 'default' after task B: {eval_loss(model, 1):.4f}")
model.set_adapter("task_b")
print(f"task B loss with adapter 'task_b': {eval_loss(model, 5):.4f}")
