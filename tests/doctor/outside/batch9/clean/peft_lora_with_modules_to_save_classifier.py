"""LoRA on a sequence classifier where the new classification head is fully trained via modules_to_save.

Unusual: almost all weights are frozen, LoRA adapters are added to attention, and the randomly
initialised "classifier" is wrapped by PEFT as a trainable copy (modules_to_save).
Source: https://github.com/huggingface/peft/issues/1070
"""

import torch
from peft import LoraConfig, get_peft_model
from transformers import BertConfig, BertForSequenceClassification

torch.manual_seed(0)
base = BertForSequenceClassification(
    BertConfig(
        vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, num_labels=3
    )
)
cfg = LoraConfig(r=4, lora_alpha=8, target_modules=["query", "value"], modules_to_save=["classifier"])
model = get_peft_model(base, cfg)
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
for _step in range(6):
    ids = torch.randint(0, 60, (8, 12))
    y = torch.randint(0, 3, (8,))
    out = model(input_ids=ids, labels=y)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
print(f"loss {out.loss.item():.4f}")
