"""Fine-tunes a tiny BERT sentence classifier (built from a config) with LoRA adapters from peft
and a hand-written loop. The LoraConfig targets the attention query/value projections but sets no
task_type (and no modules_to_save). For TaskType.SEQ_CLS peft would keep the freshly initialized
classification head trainable; without it, get_peft_model freezes every non-LoRA parameter,
including the randomly initialized `classifier`. The adapters then have to fit the task through a
fixed random projection. No error or warning (print_trainable_parameters just shows a smaller
count); accuracy stays low.

Source: https://github.com/4AI/LS-LLaMA/issues/3
"""

import torch
from peft import LoraConfig, get_peft_model
from transformers import BertConfig, BertForSequenceClassification

torch.manual_seed(0)
V, T, C = 30, 10, 4
cfg = BertConfig(
    vocab_size=V,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=128,
    max_position_embeddings=T,
    num_labels=C,
)
base = BertForSequenceClassification(cfg)
lora_cfg = LoraConfig(r=8, lora_alpha=16, target_modules=["query", "value"], lora_dropout=0.0)  # BUG-LINE
model = get_peft_model(base, lora_cfg)
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-3)


def batch(n):
    ids = torch.randint(1, V, (n, T))
    return ids, ids[:, 1] % C


model.train()
for step in range(40):
    ids, labels = batch(32)
    out = model(input_ids=ids, labels=labels)
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step} loss {out.loss.item():.4f}")
head_trainable = any(p.requires_grad for n, p in model.named_parameters() if "classifier" in n)
print(f"final loss {out.loss.item():.4f} classifier trainable {head_trainable}")
