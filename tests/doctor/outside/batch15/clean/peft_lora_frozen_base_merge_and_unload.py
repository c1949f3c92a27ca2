"""LoRA fine-tuning of a frozen tiny GPT-2, then merge_and_unload for deployment.

Unusual on purpose: after a short "pretraining" phase, every base weight is frozen and only
the LoRA A/B matrices (B initialised to zero, so the adapter starts as a no-op) receive
gradients. The optimizer only sees the trainable LoRA parameters. At the end the adapter is
merged into the base weights with merge_and_unload(), and the merged plain model is checked
to give the same logits as the adapter model. The base weights not changing during LoRA
training is the intended behaviour.

Source: https://github.com/huggingface/transformers/issues/34262
"""

import copy

import torch
from peft import LoraConfig, get_peft_model
from transformers import GPT2Config, GPT2LMHeadModel

torch.manual_seed(0)
torch.set_num_threads(2)

V, T = 48, 16
base = GPT2LMHeadModel(
    GPT2Config(vocab_size=V, n_positions=T, n_embd=32, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0)
)


def seqs(step, bs=16):
    start = torch.randint(0, V, (bs, 1))
    return (start + step * torch.arange(T)) % V


opt = torch.optim.AdamW(base.parameters(), lr=3e-3)
for it in range(40):
    ids = seqs(1)
    loss = base(input_ids=ids, labels=ids).loss
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"pretrain loss {loss.item():.4f}")

frozen_ref = copy.deepcopy(base.transformer.h[0].attn.c_attn.weight.detach())
lcfg = LoraConfig(
    r=8,
    lora_alpha=16,
    lora_dropout=0.0,
    target_modules=["c_attn", "c_proj"],
    fan_in_fan_out=True,
    task_type="CAUSAL_LM",
)
model = get_peft_model(base, lcfg)
model.print_trainable_parameters()
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-3)
model.train()
for it in range(80):
    ids = seqs(3)
    loss = model(input_ids=ids, labels=ids).loss
    opt.zero_grad()
    loss.backward()
    opt.step()
    if it % 20 == 0:
        print(f"lora step {it} loss {loss.item():.4f}")

base_layer = model.base_model.model.transformer.h[0].attn.c_attn.base_layer.weight
assert torch.equal(base_layer, frozen_ref)
model.eval()
ids = seqs(3)
with torch.no_grad():
    ref_logits = model(input_ids=ids).logits
merged = model.merge_and_unload()
with torch.no_grad():
    merged_logits = merged(input_ids=ids).logits
print(f"merged vs adapter max diff {(merged_logits - ref_logits).abs().max().item():.2e}")
