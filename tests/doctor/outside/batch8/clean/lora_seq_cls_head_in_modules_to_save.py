"""LoRA on a sequence classifier with the new classification head fully trained.

The backbone is frozen and adapted with LoRA on the attention projections; the
randomly initialised "classifier" head is listed in modules_to_save so that a
trainable copy of it is updated and saved.  A mostly-frozen model is intended.
Source: https://github.com/huggingface/peft/issues/548
"""

import torch
from peft import LoraConfig, get_peft_model
from transformers import BertConfig, BertForSequenceClassification

torch.manual_seed(0)
config = BertConfig(
    vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, num_labels=3
)
base = BertForSequenceClassification(config)
lora_cfg = LoraConfig(r=4, lora_alpha=8, target_modules=["query", "value"], modules_to_save=["classifier"])
model = get_peft_model(base, lora_cfg)
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-3)

ids = torch.randint(1, 100, (16, 10))
labels = ids[:, 0] % 3
model.train()
for _step in range(6):
    out = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=labels)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
trainable = [n for n, p in model.named_parameters() if p.requires_grad and "classifier" in n]
print(f"loss {out.loss.item():.4f} trainable head tensors {len(trainable)}")
