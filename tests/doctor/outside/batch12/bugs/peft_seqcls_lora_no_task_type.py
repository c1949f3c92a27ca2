"""LoRA fine-tuning of a small BERT sequence classifier (built from a config) with a hand-written loop
on a synthetic 3-class intent task. The LoraConfig is created without task_type, so get_peft_model
returns a generic PeftModel that does not add the freshly initialised classification head to
modules_to_save: the head is frozen together with the base model and only the LoRA matrices in the
attention layers are trained, behind a random, fixed classifier. No error or warning is raised and the
loss moves a little because the adapters can still shape the features.

Source: https://github.com/microsoft/LoRA/issues/16
"""

import torch
from peft import LoraConfig, get_peft_model
from transformers import BertConfig, BertForSequenceClassification

torch.manual_seed(0)
V = 50
keys = [list(range(4 + 5 * c, 9 + 5 * c)) for c in range(3)]


def sample(n):
    y = torch.randint(0, 3, (n,))
    x = torch.randint(20, V, (n, 12))
    for r in range(n):
        x[r, torch.randint(0, 12, (2,))] = torch.tensor(keys[y[r]])[torch.randint(0, 5, (2,))]
    return x, y


X, Y = sample(600)
model = BertForSequenceClassification(
    BertConfig(
        vocab_size=V,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        max_position_embeddings=16,
        num_labels=3,
    )
)
cfg = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["query", "value"])  # BUG-LINE
model = get_peft_model(model, cfg)
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-3)
model.train()
for step in range(40):
    idx = torch.randint(0, 500, (32,))
    out = model(input_ids=X[idx], labels=Y[idx])
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step} loss {out.loss.item():.4f}")
model.eval()
with torch.no_grad():
    print("held-out accuracy:", (model(input_ids=X[500:]).logits.argmax(-1) == Y[500:]).float().mean().item())
print("trainable non-LoRA tensors:", [n for n, p in model.named_parameters() if p.requires_grad and "lora_" not in n])
