"""Resuming LoRA fine-tuning by calling get_peft_model again instead of loading the adapter.

Stage 1 trains a LoRA adapter (plus the classification head kept via task_type SEQ_CLS) and
saves it. To resume, the script rebuilds the base model and wraps it with
`get_peft_model(base, lora_config)`. That creates a brand-new adapter (lora_B = 0, fresh head)
and never reads the saved files, so "resumed" training silently starts from scratch and the
saved adapter has no effect; the PEFT maintainers pointed out that `PeftModel.from_pretrained`
(with is_trainable=True) must be used to load an existing adapter.

Source: https://github.com/huggingface/peft/issues/793
"""

import tempfile

import torch
import torch.nn.functional as F
from peft import LoraConfig, get_peft_model
from transformers import BertConfig, BertForSequenceClassification

torch.set_num_threads(2)
VOCAB, SEQ = 40, 10
lora_config = LoraConfig(r=8, lora_alpha=16, target_modules=["query", "value", "dense"], task_type="SEQ_CLS")


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


def train(model, steps, tag):
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    model.train()
    for step in range(steps):
        x, y = batch()
        loss = F.cross_entropy(model(input_ids=x).logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == steps - 1:
            print(f"{tag} step {step:2d} loss {loss.item():.4f}")


torch.manual_seed(1)
model = get_peft_model(base_model(), lora_config)
train(model, 30, "stage1")
adapter_dir = tempfile.mkdtemp()
model.save_pretrained(adapter_dir)
del model

resumed = get_peft_model(base_model(), lora_config)  # BUG-LINE
train(resumed, 15, "resume")
