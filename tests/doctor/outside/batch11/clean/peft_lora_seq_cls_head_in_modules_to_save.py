"""LoRA fine-tuning of a tiny RoBERTa-style encoder for 3-way topic classification with peft, in a hand-written loop.
task_type=SEQ_CLS makes peft wrap the freshly initialised classification head in modules_to_save, so the head is
trained in full while the encoder is frozen and adapted only through rank-8 LoRA matrices on query/value. The
optimizer receives only the parameters that require grad. This mix of frozen base, fully trained head and low-rank
adapters is intended.

Source: https://github.com/huggingface/blog/pull/1595
"""

import torch
from peft import LoraConfig, TaskType, get_peft_model
from transformers import RobertaConfig, RobertaForSequenceClassification

torch.manual_seed(0)
V, L = 60, 12
cfg = RobertaConfig(
    vocab_size=V,
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=128,
    max_position_embeddings=40,
    num_labels=3,
    pad_token_id=1,
    bos_token_id=0,
    eos_token_id=2,
)
model = get_peft_model(
    RobertaForSequenceClassification(cfg),
    LoraConfig(task_type=TaskType.SEQ_CLS, r=8, lora_alpha=16, target_modules=["query", "value"], lora_dropout=0.0),
)
print("trainable head tensors:", sum(1 for n, p in model.named_parameters() if p.requires_grad and "classifier" in n))
g = torch.Generator().manual_seed(0)
x = torch.randint(3, V, (256, L), generator=g)
y = (x[:, :4] % 3).sum(1) % 3
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=3e-3)
model.train()
for step in range(30):
    idx = torch.randint(0, 256, (32,), generator=g)
    out = model(input_ids=x[idx], attention_mask=torch.ones_like(x[idx]), labels=y[idx])
    opt.zero_grad()
    out.loss.backward()
    opt.step()
    if step % 10 == 0:
        print(step, round(out.loss.item(), 4))
