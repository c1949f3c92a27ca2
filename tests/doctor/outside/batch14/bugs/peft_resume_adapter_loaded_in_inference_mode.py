"""Continuing LoRA training from a saved adapter that was loaded in inference mode.

Stage 1 trains a LoRA adapter on a tiny BERT classifier and saves it. Stage 2 reloads the base
model, attaches the saved adapter with `PeftModel.from_pretrained(base, path)` and keeps
training it together with a new calibration layer on the logits. `from_pretrained` defaults to
`is_trainable=False`, which freezes every adapter parameter (LoRA and modules_to_save). The
optimizer is built from the parameters that require grad, so only the small calibration layer is
updated; the loss still moves a little, hiding that the adapter is no longer trained.

Source: https://github.com/huggingface/trl/pull/363
"""

import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import BertConfig, BertForSequenceClassification

torch.set_num_threads(2)
VOCAB, SEQ = 40, 10


def base_model():
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=SEQ,
        num_labels=2,
    )
    return BertForSequenceClassification(cfg)


def batch(bs=24):
    x = torch.randint(3, VOCAB, (bs, SEQ))
    y = (x[:, 0] < 20).long()
    return x, y


torch.manual_seed(1)
model = get_peft_model(
    base_model(), LoraConfig(r=8, lora_alpha=16, target_modules=["query", "value", "dense"], task_type="SEQ_CLS")
)
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
model.train()
for step in range(30):
    x, y = batch()
    loss = F.cross_entropy(model(input_ids=x).logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"stage1 step {step:2d} loss {loss.item():.4f}")
adapter_dir = tempfile.mkdtemp()
model.save_pretrained(adapter_dir)

model = PeftModel.from_pretrained(base_model(), adapter_dir)  # BUG-LINE
calib = nn.Linear(2, 2)
params = [p for p in list(model.parameters()) + list(calib.parameters()) if p.requires_grad]
opt = torch.optim.AdamW(params, lr=1e-2)
model.train()
for step in range(15):
    x, y = batch()
    loss = F.cross_entropy(calib(model(input_ids=x).logits), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"stage2 step {step:2d} loss {loss.item():.4f}")
print("trainable tensors in stage 2:", len(params))
